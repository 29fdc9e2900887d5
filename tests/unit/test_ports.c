/*
 * Unit tests for the loopback port allocator: reservations are distinct,
 * a released port may come back (after the others), a port another
 * socket holds on 127.0.0.1 or ::1 is never handed out, and a reserved
 * port is never handed out twice even when it is all the source offers.
 */
#include <arpa/inet.h>
#include <criterion/criterion.h>
#include <errno.h>
#include <netinet/in.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "ports/ports.h"

/* A socket bound (and listening) on the loopback, as another program
 * would hold it: the "squatter". port 0: any. */
static int tst_squat(int family, int port, int *bound)
{
	int fd = socket(family, SOCK_STREAM, 0);
	cr_assert_geq(fd, 0);
	int rc;
	if (family == AF_INET6) {
		int one = 1;
		setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof one);
		struct sockaddr_in6 sa = {.sin6_family = AF_INET6,
					  .sin6_port = htons((uint16_t)port),
					  .sin6_addr = IN6ADDR_LOOPBACK_INIT};
		rc = bind(fd, (struct sockaddr *)&sa, sizeof sa);
	} else {
		struct sockaddr_in sa = {.sin_family = AF_INET,
					 .sin_port = htons((uint16_t)port),
					 .sin_addr.s_addr =
						 htonl(INADDR_LOOPBACK)};
		rc = bind(fd, (struct sockaddr *)&sa, sizeof sa);
	}
	if (rc < 0) {
		close(fd);
		return -errno;
	}
	cr_assert_eq(listen(fd, 4), 0);
	struct sockaddr_storage ss;
	socklen_t len = sizeof ss;
	cr_assert_eq(getsockname(fd, (struct sockaddr *)&ss, &len), 0);
	*bound = family == AF_INET6
			 ? ntohs(((struct sockaddr_in6 *)&ss)->sin6_port)
			 : ntohs(((struct sockaddr_in *)&ss)->sin_port);
	return fd;
}

/* A fake source: offers the listed ports in turn, then repeats the last. */
struct tst_offers {
	int ports[8];
	size_t n, next;
	int calls;
};

static int tst_offer(void *arg, int *port)
{
	struct tst_offers *o = arg;
	o->calls++;
	*port = o->ports[o->next < o->n ? o->next : o->n - 1];
	if (o->next < o->n)
		o->next++;
	return 0;
}

/* A port the kernel considers free right now. */
static int tst_free_port(void)
{
	int port = 0;
	int fd = tst_squat(AF_INET, 0, &port);
	close(fd);
	return port;
}

Test(ports, two_hundred_reservations_are_distinct)
{
	struct ports *p = ports_new();
	static int got[200];
	for (int i = 0; i < 200; i++) {
		cr_assert_eq(ports_reserve(p, &got[i]), 0, "reservation %d", i);
		cr_assert(got[i] > 0 && got[i] <= 65535);
		for (int j = 0; j < i; j++)
			cr_assert_neq(got[i], got[j], "%d and %d: port %d", i,
				      j, got[i]);
	}
	cr_assert_eq(ports_count(p), 200);
	for (int i = 0; i < 200; i++)
		ports_release(p, got[i]);
	cr_assert_eq(ports_count(p), 0);
	ports_free(p);
}

Test(ports, a_reserved_port_is_never_handed_out_twice)
{
	struct ports *p = ports_new();
	struct tst_offers o = {.ports = {tst_free_port()}, .n = 1};
	ports_set_source(p, tst_offer, &o);
	int a = 0, b = 0;
	cr_assert_eq(ports_reserve(p, &a), 0);
	cr_assert_eq(a, o.ports[0]);
	/* The source offers only the reserved port: refused, not shared. */
	cr_assert_eq(ports_reserve(p, &b), -EADDRNOTAVAIL);
	cr_assert_eq(o.calls, 1 + PORTS_TRIES);
	cr_assert(ports_is_reserved(p, a));
	ports_free(p);
}

Test(ports, a_released_port_comes_back_after_the_others)
{
	struct ports *p = ports_new();
	int first = tst_free_port();
	int other = tst_free_port();
	cr_assert_neq(first, other);
	struct tst_offers o = {.ports = {first}, .n = 1};
	ports_set_source(p, tst_offer, &o);
	int a = 0;
	cr_assert_eq(ports_reserve(p, &a), 0);
	cr_assert_eq(a, first);
	ports_release(p, a);
	cr_assert_not(ports_is_reserved(p, a));

	/* Offered again next to another: the recent one is passed over. */
	struct tst_offers o2 = {.ports = {first, other}, .n = 2};
	ports_set_source(p, tst_offer, &o2);
	int b = 0;
	cr_assert_eq(ports_reserve(p, &b), 0);
	cr_assert_eq(b, other);
	ports_release(p, b);

	/* Offered alone: it may come back. */
	struct tst_offers o3 = {.ports = {first}, .n = 1};
	ports_set_source(p, tst_offer, &o3);
	int c = 0;
	cr_assert_eq(ports_reserve(p, &c), 0);
	cr_assert_eq(c, first);
	ports_free(p);
}

Test(ports, released_ports_come_back_from_the_kernel_too)
{
	/* More reservations than the ring holds, each released at once:
	 * the allocator never runs dry. */
	struct ports *p = ports_new();
	for (int i = 0; i < 3 * PORTS_RECENT; i++) {
		int port = 0;
		cr_assert_eq(ports_reserve(p, &port), 0, "round %d", i);
		ports_release(p, port);
	}
	cr_assert_eq(ports_count(p), 0);
	ports_free(p);
}

Test(ports, a_squatter_on_127_0_0_1_is_never_returned)
{
	int squatted = 0;
	int fd = tst_squat(AF_INET, 0, &squatted);
	struct ports *p = ports_new();

	/* Offered first by the source: skipped for the next one. */
	int other = tst_free_port();
	struct tst_offers o = {.ports = {squatted, other}, .n = 2};
	ports_set_source(p, tst_offer, &o);
	int a = 0;
	cr_assert_eq(ports_reserve(p, &a), 0);
	cr_assert_eq(a, other);
	ports_release(p, a);

	/* And from the kernel, over many reservations. */
	ports_set_source(p, NULL, NULL);
	static int got[200];
	for (int i = 0; i < 200; i++) {
		cr_assert_eq(ports_reserve(p, &got[i]), 0);
		cr_assert_neq(got[i], squatted);
	}
	cr_assert_not(ports_loopback_free(squatted));
	ports_free(p);
	close(fd);
}

Test(ports, a_squatter_on_ipv6_loopback_is_never_returned)
{
	int squatted = 0;
	int fd = tst_squat(AF_INET6, 0, &squatted);
	if (fd < 0)
		cr_skip_test("no ::1 on this host");
	/* 127.0.0.1:squatted is free, so only the ::1 check catches it: a
	 * server told to listen on "localhost" could not bind there. */
	struct ports *p = ports_new();
	int other = tst_free_port();
	struct tst_offers o = {.ports = {squatted, other}, .n = 2};
	ports_set_source(p, tst_offer, &o);
	int a = 0;
	cr_assert_eq(ports_reserve(p, &a), 0);
	cr_assert_eq(a, other);
	cr_assert_not(ports_loopback_free(squatted));
	ports_free(p);
	close(fd);
}

Test(ports, the_default_is_one_per_process)
{
	struct ports *a = ports_default();
	cr_assert_not_null(a);
	cr_assert_eq(ports_default(), a);
	ports_default_free();
}
