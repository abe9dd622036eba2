/*
 * inval.c: part of the FUSE daemon: drops the kernel's cached pages of a
 * file whose bytes changed behind the page cache, before the change is
 * acknowledged, as ext4 does for every direct write.
 *
 * Why.  The kernel keeps a file's pages from one open to the next
 * (FOPEN_KEEP_CACHE, fuse_ops.c) and updates them for the writes it sees
 * go through them.  A direct write (O_DIRECT), a copy_file_range() the
 * daemon does, a punched hole or a failed write-back change bytes the
 * kernel may hold without going through them.  The kernel drops the
 * range before an O_DIRECT write of a page-cache open, but an
 * asynchronous one (libaio, io_uring) completes later with no second
 * drop, and readers of the page cache may read the old bytes back in
 * meanwhile (xfstests generic/451): they would keep them.  So each such
 * change sends FUSE_NOTIFY_INVAL_INODE for its range once the daemon has
 * the new bytes, and the request is answered only after the kernel has
 * dropped the pages: from then on, every reader, also one that holds the
 * file open, reads the new bytes.
 *
 * Why a thread.  The kernel drops a page under its page lock, and a
 * page being read in is locked until the daemon answers that READ.  A
 * worker thread that sent the notification itself would wait for another
 * worker to answer the READ; with every worker waiting so, none would be
 * left to answer, and the mount would hang.  So workers queue the
 * notification with the request and go back to serving requests; one
 * thread sends the notifications and then the replies, in queue order.
 * It waits only for what workers answer by themselves: READs, and the
 * write-backs of dirty pages that a drop starts.  When a queue entry
 * cannot be allocated, the worker does both itself: a hang needs every
 * worker in that state at once.
 *
 * The one request that waits on itself.  A page-cache open with O_DIRECT
 * falls back to a buffered write when the kernel cannot drop the range
 * first (a page mapped and dirtied again meanwhile): that WRITE carries
 * O_DIRECT too, but its writer holds the range's page locks until the
 * answer, and nothing in the request tells the two apart.  Its drop would
 * wait for its own answer.  So a watchdog answers a request whose drop
 * has taken longer than REPLY_WAIT_MS, and the drop then finishes; a
 * buffered write needs no drop (its pages have its bytes).  A true direct
 * write answered so only loses the guarantee when a READ holds a page of
 * its range for that long.
 *
 * States: RUNNING -> STOPPING [tfs_inval_stop()] -> STOPPED (the thread
 * has done the queue and ended).  Past RUNNING, calls answer at once.
 */
#include "inval.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <time.h>

#define REPLY_WAIT_MS 200

struct item {
	struct item *next;
	fuse_req_t req; /* NULL: nothing to answer */
	uint64_t ino, off, len;
	size_t n;     /* err < 0: fuse_reply_write(req, n) */
	int err;      /* else fuse_reply_err(req, err) */
	int answered; /* under mu, once the drop started */
};

struct tfs_inval {
	struct fuse_session *se;
	pthread_mutex_t mu;
	pthread_cond_t cv;	   /* the queue has work, or stopping */
	pthread_cond_t wcv;	   /* wakes the watchdog to end */
	struct item *head, **tail; /* the queue, under mu */
	int stopping;		   /* under mu */
	struct item *cur;	   /* being dropped; under mu */
	struct timespec cur_t0;	   /* when it started */
	int wd_idle;		   /* the watchdog sleeps untimed */
	int started;		   /* the threads run: join them */
	pthread_t thread, watchdog;
};

static void drop(struct fuse_session *se, uint64_t ino, uint64_t off,
		 uint64_t len)
{
	/*
	 * -ENOENT: the kernel does not know the inode (it has no pages of
	 * it).  Other errors (the mount is gone) leave nothing to drop.
	 * Offsets past what off_t holds cannot have pages.
	 */
	if (se && off <= (uint64_t)INT64_MAX)
		(void)fuse_lowlevel_notify_inval_inode(
		    se, (fuse_ino_t)ino, (off_t)off,
		    len > (uint64_t)INT64_MAX ? 0 : (off_t)len);
}

static void answer(fuse_req_t req, size_t n, int err)
{
	if (!req)
		return;
	if (err < 0)
		fuse_reply_write(req, n);
	else
		fuse_reply_err(req, err);
}

/* Claim the answer of it: 1 if the caller is to send it.  Under mu. */
static int claim(struct item *it)
{
	if (it->answered)
		return 0;
	it->answered = 1;
	return 1;
}

static void *loop(void *arg)
{
	struct tfs_inval *iv = arg;

	pthread_mutex_lock(&iv->mu);
	for (;;) {
		struct item *it = iv->head;
		int mine;

		if (!it) {
			if (iv->stopping)
				break;
			pthread_cond_wait(&iv->cv, &iv->mu);
			continue;
		}
		iv->head = it->next;
		if (!iv->head)
			iv->tail = &iv->head;
		iv->cur = it;
		clock_gettime(CLOCK_MONOTONIC, &iv->cur_t0);
		if (iv->wd_idle) {
			iv->wd_idle = 0;
			pthread_cond_signal(&iv->wcv);
		}
		pthread_mutex_unlock(&iv->mu);
		drop(iv->se, it->ino, it->off, it->len);
		pthread_mutex_lock(&iv->mu);
		iv->cur = NULL;
		mine = claim(it);
		pthread_mutex_unlock(&iv->mu);
		if (mine)
			answer(it->req, it->n, it->err);
		free(it);
		pthread_mutex_lock(&iv->mu);
	}
	pthread_mutex_unlock(&iv->mu);
	return NULL;
}

static long ms_since(const struct timespec *t0)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (long)(t.tv_sec - t0->tv_sec) * 1000 +
	       (t.tv_nsec - t0->tv_nsec) / 1000000;
}

/* Answer the request whose drop waits too long (see the top). */
static void *watch(void *arg)
{
	struct tfs_inval *iv = arg;

	pthread_mutex_lock(&iv->mu);
	while (!iv->stopping || iv->head || iv->cur) {
		struct timespec t;
		struct item *it = iv->cur;

		if (it && it->req && ms_since(&iv->cur_t0) >= REPLY_WAIT_MS &&
		    claim(it)) {
			fuse_req_t req = it->req;
			size_t n = it->n;
			int err = it->err;

			pthread_mutex_unlock(&iv->mu);
			answer(req, n, err);
			pthread_mutex_lock(&iv->mu);
			continue;
		}
		if (!it && !iv->head && !iv->stopping) {
			/* nothing to watch: sleep until there is */
			iv->wd_idle = 1;
			pthread_cond_wait(&iv->wcv, &iv->mu);
			continue;
		}
		/* busy: look every quarter of the wait */
		clock_gettime(CLOCK_REALTIME, &t);
		t.tv_nsec += REPLY_WAIT_MS / 4 * 1000000L;
		if (t.tv_nsec >= 1000000000L) {
			t.tv_sec++;
			t.tv_nsec -= 1000000000L;
		}
		pthread_cond_timedwait(&iv->wcv, &iv->mu, &t);
	}
	pthread_mutex_unlock(&iv->mu);
	return NULL;
}

void tfs_inval_attr(struct tfs_inval *iv, uint64_t ino)
{
	/* offset -1: the attributes only; no page lock is taken, so a
	 * worker may send it itself */
	if (iv && iv->se)
		(void)fuse_lowlevel_notify_inval_inode(iv->se, (fuse_ino_t)ino,
						       -1, 0);
}

struct tfs_inval *tfs_inval_new(struct fuse_session *se)
{
	struct tfs_inval *iv = calloc(1, sizeof(*iv));

	if (!iv)
		return NULL;
	iv->se = se;
	iv->tail = &iv->head;
	pthread_mutex_init(&iv->mu, NULL);
	pthread_cond_init(&iv->cv, NULL);
	pthread_cond_init(&iv->wcv, NULL);
	if (pthread_create(&iv->thread, NULL, loop, iv)) {
		tfs_inval_free(iv);
		return NULL;
	}
	if (pthread_create(&iv->watchdog, NULL, watch, iv)) {
		tfs_inval_stop(iv); /* ends and joins loop() alone */
		pthread_join(iv->thread, NULL);
		tfs_inval_free(iv);
		return NULL;
	}
	iv->started = 1;
	return iv;
}

static void queue(struct tfs_inval *iv, fuse_req_t req, uint64_t ino,
		  uint64_t off, uint64_t len, size_t n, int err)
{
	struct item *it = NULL;

	if (iv)
		it = malloc(sizeof(*it));
	if (it) {
		*it = (struct item){ NULL, req, ino, off, len, n, err, 0 };
		pthread_mutex_lock(&iv->mu);
		if (!iv->stopping) {
			*iv->tail = it;
			iv->tail = &it->next;
			pthread_cond_signal(&iv->cv);
			it = NULL;
		}
		pthread_mutex_unlock(&iv->mu);
		if (!it)
			return;
		free(it);
		/* stopping: the session may be going; only answer */
		answer(req, n, err);
		return;
	}
	drop(iv ? iv->se : NULL, ino, off, len);
	answer(req, n, err);
}

void tfs_inval_reply_write(struct tfs_inval *iv, fuse_req_t req, uint64_t ino,
			   uint64_t off, uint64_t len, size_t n)
{
	queue(iv, req, ino, off, len, n, -1);
}

void tfs_inval_reply_err(struct tfs_inval *iv, fuse_req_t req, uint64_t ino,
			 uint64_t off, uint64_t len, int err)
{
	queue(iv, req, ino, off, len, 0, err);
}

void tfs_inval_range(struct tfs_inval *iv, uint64_t ino, uint64_t off,
		     uint64_t len)
{
	queue(iv, NULL, ino, off, len, 0, 0);
}

void tfs_inval_stop(struct tfs_inval *iv)
{
	int started;

	if (!iv)
		return;
	pthread_mutex_lock(&iv->mu);
	iv->stopping = 1;
	pthread_cond_signal(&iv->cv);
	pthread_cond_signal(&iv->wcv);
	started = iv->started;
	iv->started = 0;
	pthread_mutex_unlock(&iv->mu);
	if (started) {
		pthread_join(iv->thread, NULL);
		pthread_join(iv->watchdog, NULL);
	}
}

void tfs_inval_free(struct tfs_inval *iv)
{
	if (!iv)
		return;
	tfs_inval_stop(iv);
	pthread_cond_destroy(&iv->wcv);
	pthread_cond_destroy(&iv->cv);
	pthread_mutex_destroy(&iv->mu);
	free(iv);
}
