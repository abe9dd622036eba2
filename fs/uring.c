/*
 * uring.c: part of the FUSE daemon: FUSE requests and replies carried
 * over io_uring instead of read() and writev() of /dev/fuse.
 *
 * Why.  Over /dev/fuse each request costs the daemon a read() and each
 * reply a writev(), and a worker is woken for each: with many small
 * requests the daemon's time goes to switching threads, not to work.
 * Over io_uring a thread hands its reply to the kernel and waits for the
 * next request in one io_uring_enter(), and a request is queued on the
 * calling task's CPU.
 *
 * The kernel's side (fs/fuse/dev_uring.c): one queue per possible CPU,
 * all of which must have an entry registered before any request travels
 * over them (until then new requests wait).  An entry is a header buffer
 * (struct fuse_uring_req_header: the in or out header, the opcode's
 * first argument, and the payload size) and a payload buffer, registered
 * with FUSE_IO_URING_CMD_REGISTER in a 128-byte SQE; a request arrives
 * as that SQE's completion, and FUSE_IO_URING_CMD_COMMIT_AND_FETCH sends
 * the reply and arms the entry again.  FORGET, INTERRUPT and
 * notifications stay on /dev/fuse, whose loop keeps running.
 *
 * Here: each queue has threads of its own, each thread one ring and one
 * entry, so that a queue serves as many requests at once as it has
 * threads, as /dev/fuse's workers do.  An entry's payload buffer sits
 * right after room for the request's headers: a request is made whole
 * for libfuse by copying its two headers in front of the payload, never
 * by copying the payload, and fuse_session_process_buf() dispatches it.
 * A READ may write its reply's data straight into the payload buffer
 * (tfs_uring_reply_room()); the reply then needs no copy either.
 * The reply comes back through the writev hook (transport.c), which
 * finds the entry by the request's unique.
 *
 * Only a ring's own thread submits to it.  io_uring runs the follow-up
 * of a command, here the delivery of the entry's next request, as task
 * work of the task that submitted it; a reply from another thread
 * (inval.c answers direct writes after dropping their pages) submitted
 * there would make that thread deliver the next request, and it may be
 * the one waiting, in the kernel, for that very request's page lock: a
 * READ that holds the folio it waits on.  So a reply from elsewhere is
 * left on the owner's list and the owner is woken through an eventfd
 * whose read it keeps armed in its ring; it commits the reply itself.
 *
 * Each ring uses a descriptor of the connection of its own (a dup):
 * libfuse's clone of /dev/fuse that carried INIT may be closed while
 * the queues still run.
 *
 * A request arrives only while the mount lives; at unmount or abort the
 * kernel completes each entry's command with -ENOTCONN and its thread
 * ends.  tfs_uring_stop() also ends threads of a mount that is still
 * there (a loop ended by a signal) through their eventfds.
 */
#include "uring.h"

#include <errno.h>
#include <fcntl.h>
#include <liburing.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/sysinfo.h>
#include <syslog.h>
#include <unistd.h>

#include "daemon.h"
#include "fuse_abi.h"
#include "transport.h"

/* room before the payload for the request's headers; a page keeps the
 * payload page-aligned */
#define HEAD_ROOM 4096
#define WAKE_TAG  1 /* user_data of the eventfd read */

struct qthread;

struct ent {
	struct fuse_uring_req_header *hdr;
	char *buf;	     /* HEAD_ROOM, then the payload */
	struct iovec reg[2]; /* what REGISTER hands the kernel */
	struct qthread *t;
	uint64_t unique; /* the request in the daemon; 0: none */
};

struct qthread {
	struct tfs_uring *u;
	struct io_uring ring;
	int ring_ok;
	int efd;	    /* wakes the owner; -1: none */
	uint64_t efd_val;   /* what its armed read reads */
	int efd_armed;	    /* owner only */
	pthread_mutex_t mu; /* guards the two below */
	uint64_t to_commit; /* a reply from elsewhere, to commit; 0: none */
	struct ent e;
	unsigned qid;
	pthread_t th;
	int started;
};

struct tfs_uring {
	struct tfs_transport *tp;
	struct fuse_session *se;
	int fd;
	size_t payload;
	unsigned nq, nt;
	struct qthread *t;
	uint64_t served;
	int stopping;
	char desc[128];
};

/* The entry this thread is serving, if it is a queue's. */
static __thread struct ent *cur_ent;

static void prep_cmd(struct io_uring_sqe *sqe, int fd, uint32_t op,
		     struct ent *e, uint64_t commit_id)
{
	struct fuse_uring_cmd_req *req = (void *)sqe->cmd;

	memset(sqe, 0, 2 * sizeof(*sqe)); /* an SQE128 */
	sqe->opcode = IORING_OP_URING_CMD;
	sqe->fd = fd;
	sqe->cmd_op = op;
	sqe->user_data = (uint64_t)(uintptr_t)e;
	req->qid = (uint16_t)e->t->qid;
	req->commit_id = commit_id;
	if (op == FUSE_IO_URING_CMD_REGISTER) {
		sqe->addr = (uint64_t)(uintptr_t)e->reg;
		sqe->len = 2;
	}
}

/* Queue the commit of the reply in t's entry's buffers and the fetch
 * of its next request; the owner's next io_uring_enter() submits it.
 * The owner's thread only. */
static int queue_commit(struct qthread *t, uint64_t unique)
{
	struct io_uring_sqe *sqe = io_uring_get_sqe(&t->ring);

	if (!sqe)
		return -EBUSY; /* two SQEs at most in flight: cannot be */
	prep_cmd(sqe, t->u->fd, FUSE_IO_URING_CMD_COMMIT_AND_FETCH, &t->e,
		 unique);
	return 0;
}

/* Wake t's thread: its armed eventfd read completes. */
static void wake(struct qthread *t)
{
	uint64_t one = 1;

	while (write(t->efd, &one, sizeof(one)) < 0 && errno == EINTR)
		;
}

int tfs_uring_reply(struct tfs_uring *u, const struct iovec *iov, int count)
{
	const struct fuse_out_header *oh = iov[0].iov_base;
	struct ent *e = cur_ent;
	size_t n = 0;
	int rc;

	if (!e || __atomic_load_n(&e->unique, __ATOMIC_ACQUIRE) != oh->unique) {
		e = NULL;
		for (unsigned i = 0; i < u->nt && !e; i++)
			if (__atomic_load_n(&u->t[i].e.unique,
					    __ATOMIC_ACQUIRE) == oh->unique)
				e = &u->t[i].e;
		if (!e)
			return 0;
	}
	memcpy(e->hdr->in_out, oh, sizeof(*oh));
	for (int i = 1; i < count; i++) {
		if (n + iov[i].iov_len > u->payload) {
			/* cannot be: libfuse's replies fit max_write */
			struct fuse_out_header *w = (void *)e->hdr->in_out;

			w->error = -EIO;
			n = 0;
			break;
		}
		if (iov[i].iov_base != e->buf + HEAD_ROOM + n)
			memcpy(e->buf + HEAD_ROOM + n, iov[i].iov_base,
			       iov[i].iov_len);
		n += iov[i].iov_len;
	}
	e->hdr->ring_ent_in_out.payload_sz = (uint32_t)n;
	__atomic_store_n(&e->unique, 0, __ATOMIC_RELEASE);
	if (e == cur_ent) {
		rc = queue_commit(e->t, oh->unique);
		return rc < 0 ? rc : 1;
	}
	pthread_mutex_lock(&e->t->mu);
	e->t->to_commit = oh->unique;
	pthread_mutex_unlock(&e->t->mu);
	wake(e->t);
	return 1;
}

/*
 * The request in e, made whole in front of its payload and handed to
 * libfuse.  A request whose sizes do not add up (the kernel's, so never)
 * is answered EIO.
 */
static void dispatch(struct qthread *t, struct ent *e)
{
	struct tfs_uring *u = t->u;
	struct fuse_in_header in;
	uint32_t psz = e->hdr->ring_ent_in_out.payload_sz;
	size_t oplen, pad;
	char *start;

	memcpy(&in, e->hdr->in_out, sizeof(in));
	if (in.len < sizeof(in) + (size_t)psz || psz > u->payload ||
	    in.len - sizeof(in) - psz > FUSE_URING_OP_IN_OUT_SZ) {
		struct fuse_out_header oh = { .len = sizeof(oh),
					      .error = -EIO,
					      .unique = in.unique };
		struct iovec v = { &oh, sizeof(oh) };

		tfs_daemon_log(LOG_ERR,
			       "io_uring request %llu (opcode %u) has "
			       "impossible sizes (len %u, payload %u): "
			       "answered EIO",
			       (unsigned long long)in.unique, in.opcode, in.len,
			       psz);
		__atomic_store_n(&e->unique, in.unique, __ATOMIC_RELEASE);
		tfs_uring_reply(u, &v, 1);
		return;
	}
	oplen = in.len - sizeof(in) - psz;
	/* libfuse reads the headers in place: they must be aligned, and
	 * an opcode whose first argument is a name (LOOKUP, SYMLINK) has
	 * an odd length; its payload, if any, is small */
	pad = (8 - (sizeof(in) + oplen) % 8) % 8;
	if (!pad) {
		start = e->buf + HEAD_ROOM - oplen - sizeof(in);
	} else if (psz <= HEAD_ROOM / 2) {
		start = e->buf;
		memcpy(start + sizeof(in) + oplen, e->buf + HEAD_ROOM, psz);
	} else {
		memmove(e->buf + HEAD_ROOM + pad, e->buf + HEAD_ROOM, psz);
		start = e->buf + HEAD_ROOM + pad - oplen - sizeof(in);
	}
	memcpy(start, &in, sizeof(in));
	memcpy(start + sizeof(in), e->hdr->op_in, oplen);

	__atomic_store_n(&e->unique, in.unique, __ATOMIC_RELEASE);
	tfs_transport_inspect(u->tp, start, in.len);
	{
		struct fuse_buf b = { .mem = start, .size = in.len };

		fuse_session_process_buf(u->se, &b);
	}
	__atomic_add_fetch(&u->served, 1, __ATOMIC_RELAXED);
}

/* Arm the read of t's eventfd, if it is not armed. */
static void arm_wake(struct qthread *t)
{
	struct io_uring_sqe *sqe;

	if (t->efd_armed)
		return;
	sqe = io_uring_get_sqe(&t->ring);
	if (!sqe)
		return; /* cannot be; the next turn tries again */
	memset(sqe, 0, 2 * sizeof(*sqe));
	io_uring_prep_read(sqe, t->efd, &t->efd_val, sizeof(t->efd_val), 0);
	sqe->user_data = WAKE_TAG;
	t->efd_armed = 1;
}

static void *qthread_main(void *arg)
{
	struct qthread *t = arg;
	struct tfs_uring *u = t->u;
	struct ent *e = &t->e;

	cur_ent = e;
	for (;;) {
		struct io_uring_cqe *cqe;
		uint64_t unique;
		int rc, res;
		uint64_t tag;

		pthread_mutex_lock(&t->mu);
		unique = t->to_commit;
		t->to_commit = 0;
		pthread_mutex_unlock(&t->mu);
		if (unique && queue_commit(t, unique) < 0)
			break;
		arm_wake(t);
		rc = io_uring_submit_and_wait(&t->ring, 1);
		if (rc < 0 && rc != -EINTR && rc != -EAGAIN)
			break;
		rc = io_uring_wait_cqe(&t->ring, &cqe);
		if (rc == -EINTR || rc == -EAGAIN)
			continue;
		if (rc < 0)
			break;
		res = cqe->res;
		tag = cqe->user_data;
		io_uring_cqe_seen(&t->ring, cqe);
		if (tag == WAKE_TAG) {
			t->efd_armed = 0;
			if (__atomic_load_n(&u->stopping, __ATOMIC_ACQUIRE))
				break;
			continue;
		}
		if (res < 0) {
			/* -ENOTCONN, -ECONNABORTED: the mount is gone;
			 * -ECANCELED: so is the ring's task */
			if (res != -ENOTCONN && res != -ECONNABORTED &&
			    res != -ECANCELED &&
			    !__atomic_load_n(&u->stopping, __ATOMIC_ACQUIRE))
				tfs_daemon_log(LOG_ERR,
					       "io_uring queue %u: %s; its "
					       "requests stop",
					       t->qid, strerror(-res));
			break;
		}
		dispatch(t, e);
	}
	return NULL;
}

/*
 * How many CPUs the kernel deems possible (num_possible_cpus()): the
 * number of queues it waits for.  Counted from its list
 * (/sys/devices/system/cpu/possible, "0-63" or "0-3,8-11"), which may
 * name more than are present or online; fewer queues than that would
 * leave the mount waiting for ever.
 */
static int possible_cpus(void)
{
	char buf[4096];
	FILE *f = fopen("/sys/devices/system/cpu/possible", "r");
	int n = 0;

	if (!f)
		return get_nprocs_conf();
	if (!fgets(buf, sizeof(buf), f))
		buf[0] = '\0';
	fclose(f);
	for (char *save = NULL, *t = strtok_r(buf, ",\n", &save); t;
	     t = strtok_r(NULL, ",\n", &save)) {
		unsigned lo, hi;
		int k = sscanf(t, "%u-%u", &lo, &hi);

		if (k == 1)
			n++;
		else if (k == 2 && hi >= lo)
			n += (int)(hi - lo + 1);
	}
	return n > 0 ? n : get_nprocs_conf();
}

struct tfs_uring *tfs_uring_new(struct tfs_transport *tp,
				struct fuse_session *se, int fd, size_t payload,
				unsigned threads, int *err)
{
	struct tfs_uring *u = calloc(1, sizeof(*u));
	int nq = possible_cpus();

	*err = -ENOMEM;
	if (!u)
		return NULL;
	if (nq < 1)
		nq = 1;
	u->tp = tp;
	u->se = se;
	u->fd = fcntl(fd, F_DUPFD_CLOEXEC, 0);
	if (u->fd < 0) {
		*err = -errno;
		free(u);
		return NULL;
	}
	u->payload = payload;
	u->nq = (unsigned)nq;
	u->nt = threads < u->nq ? u->nq : threads;
	/* whole queues: the same number of threads for each */
	u->nt = (u->nt + u->nq - 1) / u->nq * u->nq;
	u->t = calloc(u->nt, sizeof(*u->t));
	if (!u->t)
		goto fail;
	for (unsigned i = 0; i < u->nt; i++)
		u->t[i].efd = -1;
	for (unsigned i = 0; i < u->nt; i++) {
		struct qthread *t = &u->t[i];
		struct ent *e = &t->e;
		int rc;

		t->u = u;
		t->qid = i % u->nq;
		pthread_mutex_init(&t->mu, NULL);
		t->efd = eventfd(0, EFD_CLOEXEC);
		if (t->efd < 0) {
			*err = -errno;
			goto fail;
		}
		e->t = t;
		e->hdr = aligned_alloc(64, (sizeof(*e->hdr) + 63) / 64 * 64);
		/* 8 more than the payload: dispatch() may shift it */
		e->buf = aligned_alloc(4096, HEAD_ROOM + (payload + 8 + 4095) /
							     4096 * 4096);
		if (!e->hdr || !e->buf)
			goto fail;
		memset(e->hdr, 0, sizeof(*e->hdr));
		e->reg[0].iov_base = e->hdr;
		e->reg[0].iov_len = sizeof(*e->hdr);
		e->reg[1].iov_base = e->buf + HEAD_ROOM;
		e->reg[1].iov_len = payload;
		rc = io_uring_queue_init(4, &t->ring, IORING_SETUP_SQE128);
		if (rc < 0) {
			*err = rc;
			goto fail;
		}
		t->ring_ok = 1;
	}
	snprintf(u->desc, sizeof(u->desc),
		 "%u queues, %u threads, %zu MiB of buffers", u->nq, u->nt,
		 (size_t)u->nt * (HEAD_ROOM + payload) >> 20);
	*err = 0;
	return u;
fail:
	tfs_uring_free(u);
	return NULL;
}

/* A queue number out of range fails the registration, which turns
 * io_uring off for the connection. */
void tfs_uring_refuse(int fd)
{
	static struct fuse_uring_req_header hdr;
	static char payload[8];
	struct io_uring ring;
	struct io_uring_sqe *sqe;
	struct io_uring_cqe *cqe;
	struct tfs_uring u = { .fd = fd };
	struct qthread t = { .u = &u, .qid = 0xffff };
	struct ent e = { .t = &t, .hdr = &hdr };

	if (io_uring_queue_init(2, &ring, IORING_SETUP_SQE128) < 0)
		return;
	e.reg[0].iov_base = &hdr;
	e.reg[0].iov_len = sizeof(hdr);
	e.reg[1].iov_base = payload;
	e.reg[1].iov_len = sizeof(payload);
	sqe = io_uring_get_sqe(&ring);
	if (sqe) {
		prep_cmd(sqe, fd, FUSE_IO_URING_CMD_REGISTER, &e, 0);
		if (io_uring_submit(&ring) == 1 &&
		    io_uring_wait_cqe(&ring, &cqe) == 0)
			io_uring_cqe_seen(&ring, cqe);
	}
	io_uring_queue_exit(&ring);
}

int tfs_uring_run(struct tfs_uring *u)
{
	int rc = 0;

	for (unsigned i = 0; i < u->nt && !rc; i++) {
		struct qthread *t = &u->t[i];
		struct io_uring_sqe *sqe = io_uring_get_sqe(&t->ring);

		if (!sqe) {
			rc = -EBUSY;
			break;
		}
		prep_cmd(sqe, u->fd, FUSE_IO_URING_CMD_REGISTER, &t->e, 0);
		rc = pthread_create(&t->th, NULL, qthread_main, t);
		if (rc) {
			rc = -rc;
			break;
		}
		t->started = 1;
	}
	if (rc)
		tfs_uring_refuse(u->fd);
	return rc;
}

void *tfs_uring_reply_room(size_t *cap)
{
	struct ent *e = cur_ent;

	if (!e || !__atomic_load_n(&e->unique, __ATOMIC_RELAXED))
		return NULL;
	*cap = e->t->u->payload;
	return e->buf + HEAD_ROOM;
}

uint64_t tfs_uring_served(const struct tfs_uring *u)
{
	return __atomic_load_n(&u->served, __ATOMIC_RELAXED);
}

const char *tfs_uring_describe(const struct tfs_uring *u)
{
	return u->desc;
}

void tfs_uring_stop(struct tfs_uring *u)
{
	if (!u)
		return;
	__atomic_store_n(&u->stopping, 1, __ATOMIC_RELEASE);
	for (unsigned i = 0; i < u->nt; i++)
		if (u->t[i].started)
			wake(&u->t[i]);
	for (unsigned i = 0; i < u->nt; i++)
		if (u->t[i].started) {
			pthread_join(u->t[i].th, NULL);
			u->t[i].started = 0;
		}
}

void tfs_uring_free(struct tfs_uring *u)
{
	if (!u)
		return;
	tfs_uring_stop(u);
	for (unsigned i = 0; u->t && i < u->nt; i++) {
		struct qthread *t = &u->t[i];

		if (t->ring_ok)
			io_uring_queue_exit(&t->ring);
		if (t->efd >= 0)
			close(t->efd);
		free(t->e.hdr);
		free(t->e.buf);
		pthread_mutex_destroy(&t->mu);
	}
	if (u->fd >= 0)
		close(u->fd);
	free(u->t);
	free(u);
}
