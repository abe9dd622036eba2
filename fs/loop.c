/*
 * loop.c: part of the FUSE daemon, the adapter between the kernel's FUSE
 * requests and lib/ calls.  This file holds the session loop: the
 * threads that read requests from /dev/fuse and run their handlers.
 *
 * Why not fuse_session_loop_mt().  Its workers all wait in read() on
 * /dev/fuse, and the kernel wakes them first in, first out: a program
 * that makes one request after another (create, stat, unlink in a loop)
 * has each served by another thread, each woken from sleep.  Measured on
 * a 2-core VM (20,000 empty files, open(O_CREAT)+close, stat, unlink,
 * kernel 6.18): one thread instead of libfuse's rotating ones took 6.5
 * instead of 11-15 us of daemon CPU per stat and served 1.5-2x the
 * requests a second, because the thread that has just replied is the
 * one that reads the next request, often before it has gone to sleep.
 *
 * So here one thread at a time reads (it holds the reader role), and
 * keeps the role while it runs a handler that does in-memory work only
 * (names, attributes, open and close: lib/'s namespace operations,
 * which wait on nothing but fs->lock): no other thread is woken and the
 * next request waits in the kernel for microseconds.  A request that may
 * wait on the device or on the write-back pool (read, write, fsync,
 * fallocate, truncation, ioctl; may_block()) first hands the role to an
 * idle thread, the one idle the shortest time (a stack), or starts a new
 * one while fewer than max_threads run, so requests keep being read while
 * it waits, as with libfuse's loop.  When all max_threads threads wait,
 * nobody reads until one is done; the first one done takes the role back,
 * the others go idle.
 *
 * No handler waits for another FUSE request to be served (the daemon
 * never touches its own mount), so holding the role through a handler
 * cannot deadlock; an in-memory handler blocked on fs->lock by a
 * checkpoint delays the requests behind it, which would mostly wait on
 * the same lock anyway.
 *
 * Ending: a worker whose read fails (ENODEV at unmount) or finds the
 * session exited (fuse_session_exit() from the signal handler, which runs
 * on the main thread, the only one with signals unblocked) wakes the
 * main thread, which sets exiting, wakes the idle workers, cancels the
 * ones in read() (cancellation is enabled there only) and joins them all.
 */
#ifndef FUSE_USE_VERSION
#define FUSE_USE_VERSION 312
#endif

#include "loop.h"

#include <errno.h>
#include <fcntl.h>
#include <fuse_lowlevel.h>
#include <linux/fuse.h>
#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

struct worker {
	struct loop *lp;
	pthread_t thr;
	pthread_cond_t cv;
	struct worker *next_idle;
	int go;				/* handed the reader role */
	int started;
	struct fuse_buf buf;		/* its request buffer, kept */
};

struct loop {
	struct fuse_session *se;
	pthread_mutex_t mu;
	struct worker *idle;		/* stack: last idle on top */
	int reader;			/* a thread holds the reader role */
	int exiting;
	int error;			/* -errno of a failed read */
	unsigned int n, max;		/* workers started, at most */
	struct worker *w;		/* max of them */
	sem_t finish;			/* a worker ended */
};

/*
 * Whether serving the request in b may wait for more than fs->lock: the
 * device, the write-back pool, a flush.  Unknown requests count as
 * waiting, so only the listed ones keep the reader role.
 */
static int may_block(const struct fuse_buf *b)
{
	const struct fuse_in_header *in = b->mem;
	const void *arg = in + 1;
	uint32_t flags;

	if ((b->flags & FUSE_BUF_IS_FD) || b->size < sizeof(*in))
		return 1;
	switch (in->opcode) {
	case FUSE_LOOKUP:
	case FUSE_FORGET:
	case FUSE_BATCH_FORGET:
	case FUSE_GETATTR:
	case FUSE_READLINK:
	case FUSE_MKNOD:
	case FUSE_MKDIR:
	case FUSE_UNLINK:
	case FUSE_RMDIR:
	case FUSE_SYMLINK:
	case FUSE_RENAME:
	case FUSE_RENAME2:
	case FUSE_LINK:
	case FUSE_FLUSH:		/* starts write-back, waits for none */
	case FUSE_RELEASE:
	case FUSE_OPENDIR:
	case FUSE_READDIR:
	case FUSE_RELEASEDIR:
	case FUSE_STATFS:
	case FUSE_GETXATTR:
	case FUSE_LISTXATTR:
	case FUSE_INTERRUPT:
		return 0;
	case FUSE_SETATTR:		/* a new size truncates */
		if (b->size < sizeof(*in) + sizeof(struct fuse_setattr_in))
			return 1;
		memcpy(&flags, arg, sizeof(flags));	/* valid */
		return (flags & FATTR_SIZE) != 0;
	case FUSE_OPEN:			/* O_TRUNC truncates */
	case FUSE_CREATE:
		/* flags is the first field of fuse_open_in and
		 * fuse_create_in */
		if (b->size < sizeof(*in) + sizeof(flags))
			return 1;
		memcpy(&flags, arg, sizeof(flags));
		return (flags & O_TRUNC) != 0;
	default:
		return 1;
	}
}

static void *worker_main(void *arg);

/* Start worker n+1, born with the reader role.  Caller holds mu. */
static int start_worker(struct loop *lp)
{
	struct worker *w = &lp->w[lp->n];
	sigset_t all, old;
	int rc;

	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, &old);
	rc = pthread_create(&w->thr, NULL, worker_main, w);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (rc)
		return -rc;
	w->started = 1;
	lp->n++;
	return 0;
}

/* The reader role to an idle worker, a new one, or nobody. */
static void hand_off(struct loop *lp)
{
	struct worker *w;

	pthread_mutex_lock(&lp->mu);
	w = lp->idle;
	if (w) {
		lp->idle = w->next_idle;
		w->go = 1;
		pthread_cond_signal(&w->cv);
	} else if (lp->exiting || lp->n == lp->max || start_worker(lp)) {
		lp->reader = 0;	/* the first one done takes it */
	}
	pthread_mutex_unlock(&lp->mu);
}

/* After a request served without the role: take it back if nobody
 * holds it, else wait idle until handed it.  0, or 1 to end. */
static int take_back(struct loop *lp, struct worker *w)
{
	int end;

	pthread_mutex_lock(&lp->mu);
	if (!lp->reader && !lp->exiting) {
		lp->reader = 1;
	} else {
		w->next_idle = lp->idle;
		lp->idle = w;
		while (!w->go && !lp->exiting)
			pthread_cond_wait(&w->cv, &lp->mu);
		w->go = 0;
	}
	end = lp->exiting;
	pthread_mutex_unlock(&lp->mu);
	return end;
}

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	struct loop *lp = w->lp;
	struct fuse_session *se = lp->se;

	pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, NULL);
	while (!fuse_session_exited(se)) {
		int res, blocks;

		pthread_setcancelstate(PTHREAD_CANCEL_ENABLE, NULL);
		res = fuse_session_receive_buf(se, &w->buf);
		pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, NULL);
		if (res == -EINTR)
			continue;
		if (res <= 0) {
			if (res < 0) {
				pthread_mutex_lock(&lp->mu);
				lp->error = res;
				pthread_mutex_unlock(&lp->mu);
				fuse_session_exit(se);
			}
			break;
		}
		blocks = may_block(&w->buf);
		if (blocks)
			hand_off(lp);
		fuse_session_process_buf(se, &w->buf);
		if (blocks && take_back(lp, w))
			break;
	}
	sem_post(&lp->finish);
	return NULL;
}

int tfs_loop_run(struct fuse_session *se, unsigned int max_threads)
{
	struct loop lp;
	int rc;

	memset(&lp, 0, sizeof(lp));
	lp.se = se;
	lp.max = max_threads ? max_threads : 1;
	lp.w = calloc(lp.max, sizeof(*lp.w));
	if (!lp.w)
		return -ENOMEM;
	pthread_mutex_init(&lp.mu, NULL);
	sem_init(&lp.finish, 0, 0);
	for (unsigned int i = 0; i < lp.max; i++) {
		lp.w[i].lp = &lp;
		pthread_cond_init(&lp.w[i].cv, NULL);
	}
	pthread_mutex_lock(&lp.mu);
	lp.reader = 1;
	rc = start_worker(&lp);
	pthread_mutex_unlock(&lp.mu);
	if (!rc)
		while (!fuse_session_exited(se))
			sem_wait(&lp.finish);	/* EINTR: a signal */

	pthread_mutex_lock(&lp.mu);
	lp.exiting = 1;
	for (struct worker *w = lp.idle; w; w = w->next_idle)
		pthread_cond_signal(&w->cv);
	pthread_mutex_unlock(&lp.mu);
	for (unsigned int i = 0; i < lp.n; i++)
		pthread_cancel(lp.w[i].thr);	/* the one in read() */
	for (unsigned int i = 0; i < lp.n; i++)
		pthread_join(lp.w[i].thr, NULL);
	if (!rc)
		rc = lp.error;
	for (unsigned int i = 0; i < lp.max; i++) {
		free(lp.w[i].buf.mem);
		pthread_cond_destroy(&lp.w[i].cv);
	}
	free(lp.w);
	sem_destroy(&lp.finish);
	pthread_mutex_destroy(&lp.mu);
	fuse_session_reset(se);
	return rc;
}
