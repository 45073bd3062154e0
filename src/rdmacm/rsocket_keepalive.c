/* SPDX-License-Identifier: MIT */
/*
 * SO_KEEPALIVE for stream rsockets: one thread per process sends each
 * keepalive rsocket a 0-byte RDMA WRITE every keepalive_time seconds
 * (TCP_KEEPIDLE; default /proc/sys/net/ipv4/tcp_keepalive_time, as
 * rdma-core). The peer's HCA acknowledges it and its application never sees
 * it; a peer that is gone makes the WRITE fail after the QP's retries, which
 * puts the rsocket into the error state (ECONNRESET) and wakes its waiters.
 *
 * Lock order: rs_ka_lock, then an rsocket's lock. rclose/rshutdown take the
 * rsocket out of the list first, so the thread never sees a freed one.
 * ka_next and ka_due_us are guarded by rs_ka_lock.
 */
#include <stdio.h>
#include <stdlib.h>

#include "rdmacm/rsocket_int.h"

static pthread_mutex_t rs_ka_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t rs_ka_cond;
static struct rsocket *rs_ka_list;
static bool rs_ka_running;

static unsigned int rs_default_keepalive(void)
{
	unsigned int t = 7200;
	FILE *f = fopen("/proc/sys/net/ipv4/tcp_keepalive_time", "r");

	if (f) {
		if (fscanf(f, "%u", &t) != 1 || !t)
			t = 7200;
		fclose(f);
	}
	return t;
}

static void *rs_ka_thread(void *arg)
{
	(void)arg;
	pthread_mutex_lock(&rs_ka_lock);
	for (;;) {
		uint64_t now = rs_now_us(), next = UINT64_MAX;
		struct timespec ts;

		for (struct rsocket *rs = rs_ka_list; rs; rs = rs->ka_next) {
			if (rs->ka_due_us <= now) {
				pthread_mutex_lock(&rs->lock);
				rs_progress(rs); /* reap earlier keepalives */
				if ((rs->state & RS_CONNECTED) && rs_ctrl_avail(rs) &&
				    rs_post_keepalive(rs))
					rs_set_error(rs, ECONNRESET, "posting a keepalive failed");
				rs->ka_due_us = now + (uint64_t)rs->keepalive_time * 1000000u;
				pthread_mutex_unlock(&rs->lock);
			}
			if (rs->ka_due_us < next)
				next = rs->ka_due_us;
		}
		if (next == UINT64_MAX) {
			pthread_cond_wait(&rs_ka_cond, &rs_ka_lock);
			continue;
		}
		clock_gettime(CLOCK_MONOTONIC, &ts);
		next -= now;
		ts.tv_sec += (time_t)(next / 1000000u);
		ts.tv_nsec += (long)(next % 1000000u) * 1000;
		if (ts.tv_nsec >= 1000000000L) {
			ts.tv_sec++;
			ts.tv_nsec -= 1000000000L;
		}
		pthread_cond_timedwait(&rs_ka_cond, &rs_ka_lock, &ts);
	}
	return NULL;
}

static void rs_ka_unlink(struct rsocket *rs)
{
	for (struct rsocket **pp = &rs_ka_list; *pp; pp = &(*pp)->ka_next) {
		if (*pp == rs) {
			*pp = rs->ka_next;
			rs->ka_next = NULL;
			return;
		}
	}
}

int rs_keepalive_set(struct rsocket *rs, bool on)
{
	int ret = 0;

	pthread_mutex_lock(&rs_ka_lock);
	rs_ka_unlink(rs);
	if (on) {
		if (!rs_ka_running) {
			pthread_condattr_t ca;
			pthread_attr_t a;
			pthread_t t;

			pthread_condattr_init(&ca);
			pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
			pthread_cond_init(&rs_ka_cond, &ca);
			pthread_condattr_destroy(&ca);
			pthread_attr_init(&a);
			pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
			ret = -pthread_create(&t, &a, rs_ka_thread, NULL);
			pthread_attr_destroy(&a);
			rs_ka_running = !ret;
		}
		if (!ret) {
			if (!rs->keepalive_time)
				rs->keepalive_time = rs_default_keepalive();
			rs->ka_due_us = rs_now_us() + (uint64_t)rs->keepalive_time * 1000000u;
			rs->ka_next = rs_ka_list;
			rs_ka_list = rs;
			pthread_cond_signal(&rs_ka_cond);
		}
	}
	pthread_mutex_unlock(&rs_ka_lock);
	return ret;
}

void rs_keepalive_remove(struct rsocket *rs)
{
	pthread_mutex_lock(&rs_ka_lock);
	rs_ka_unlink(rs);
	pthread_mutex_unlock(&rs_ka_lock);
}

void rs_keepalive_kick(struct rsocket *rs)
{
	pthread_mutex_lock(&rs_ka_lock);
	for (struct rsocket *r = rs_ka_list; r; r = r->ka_next) {
		if (r == rs) {
			r->ka_due_us = rs_now_us() + (uint64_t)r->keepalive_time * 1000000u;
			pthread_cond_signal(&rs_ka_cond);
			break;
		}
	}
	pthread_mutex_unlock(&rs_ka_lock);
}
