/*
 * fs.c: the file system's lifecycle: open (load, recover), start, sync,
 * close, and the counters tools read.
 *
 * The file system is in six parts around one struct tfs_fs
 * (fs_internal.h, with the lock order): this file; namespace.c (names,
 * directories, attributes); inode.c (an inode's lifetime, atime and
 * stale mark); file.c (file data and the cache's device side); xattr.c;
 * commit.c (the running transaction and checkpoints).
 *
 * States: tfs_fs_open() loads the last committed state (checkpoint plus
 * journal) and, unless read-only or no_recover, recovers: inodes with no
 * links (open, or known to the kernel, but unlinked at a crash: files and
 * directories alike) are freed, and a checkpoint makes
 * the replayed state the committed one with an empty journal.  The
 * allocator is rebuilt from the extent maps and the checkpoints' maps
 * (journal.c's J10); an extent outside the data area or overlapping
 * another or the checkpoint fails the open (-EUCLEAN).  tfs_fs_start()
 * starts the cache's flushers and the commit thread (after any fork);
 * tfs_fs_close() frees the unlinked inodes only the kernel's lookups
 * kept (tfs_inode_forget_all()), writes everything back, commits, and
 * writes a clean checkpoint (TFS_SB_CLEAN), which the next open needs no
 * replay after.
 *
 * Read-only: opened so (opts.readonly: the device O_RDONLY, nothing
 * recovered, nothing ever written), or turned so while mounted
 * (tfs_fs_set_readonly(), a remount,ro: everything written back and
 * checkpointed clean, then no change and no commit until turned
 * writable again).  Either way changes fail with EROFS.
 *
 * The error state (journal.c's J7), as ext4's errors=remount-ro: entered
 * once (tfs_fs_fail()) when the journal stops after a failed flush or
 * superblock write, or when the image file is found deleted or
 * truncated under the mount (tfs_fs_check_device(), at every commit and
 * after a failed device read).  From then on every change fails with
 * EROFS, reads keep working, nothing more is written to the device, and
 * fsync, sync and close return the error.  The device keeps the state
 * of the last good commit.  Write-back errors of file data do not enter
 * it: they are the file's (file.c).
 */
#include "fs_internal.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "set.h"
#include "units.h"

_Static_assert(TFS_FS_ROOT == TFS_ROOT_INO, "fs.h and format.h disagree");
_Static_assert(TFS_FS_FORMAT == TFS_VERSION, "fs.h and format.h disagree");

int tfs_fs_sync(struct tfs_fs *fs)
{
	if (tfs_fs_is_readonly(fs))
		return 0;
	if (tfs_fs_failed(fs))
		return tfs_fs_failed(fs);
	tfs_cache_sync_all(fs->cache);
	return tfs_txn_commit(fs);
}

/* ===== the error state ===== */

void tfs_fs_fail(struct tfs_fs *fs, int rc, const char *fmt, ...)
{
	char msg[1536];
	va_list ap;

	pthread_mutex_lock(&fs->errlock);
	if (fs->error) {
		pthread_mutex_unlock(&fs->errlock);
		return;
	}
	va_start(ap, fmt);
	vsnprintf(fs->errmsg, sizeof(fs->errmsg), fmt, ap);
	va_end(ap);
	__atomic_store_n(&fs->error, rc ? rc : -EIO, __ATOMIC_RELEASE);
	snprintf(msg, sizeof(msg),
		 "%s: %s; the file system takes no more "
		 "changes (they fail with EROFS), reads still work; the "
		 "device keeps the last committed state: unmount and run "
		 "tensorfs-fsck",
		 fs->path ? fs->path : "device", fs->errmsg);
	pthread_mutex_unlock(&fs->errlock);
	if (fs->opts.log)
		fs->opts.log(msg);
}

int tfs_fs_error(struct tfs_fs *fs, char *buf, size_t len)
{
	int rc;

	pthread_mutex_lock(&fs->errlock);
	rc = fs->error;
	if (buf && len)
		snprintf(buf, len, "%s", rc ? fs->errmsg : "");
	pthread_mutex_unlock(&fs->errlock);
	return rc;
}

int tfs_fs_check_device(struct tfs_fs *fs)
{
	unsigned int n = tfs_dev_members(fs->dev);
	char which[TFS_WHERE_LEN];
	struct stat st;

	for (unsigned int m = 0; m < n && m < TFS_SET_MAX; m++) {
		uint64_t need = tfs_super_member_blocks(&fs->j.sb, m) * BS;

		if (fs->watch_fd[m] < 0 || tfs_fs_failed(fs) ||
		    fstat(fs->watch_fd[m], &st))
			continue;
		which[0] = '\0';
		if (n > 1) /* name the member of a set */
			snprintf(which, sizeof(which), " of member %u (%s)",
				 m + 1, tfs_dev_member_path(fs->dev, m));
		if (st.st_nlink == 0)
			tfs_fs_fail(fs, -EIO,
				    "the image%s was deleted while mounted; "
				    "its data is gone at unmount: copy out "
				    "what you need first",
				    which);
		else if ((uint64_t)st.st_size < need)
			tfs_fs_fail(fs, -EIO,
				    "the image%s was truncated to %llu bytes "
				    "while mounted (the file system needs "
				    "%llu)",
				    which, (unsigned long long)st.st_size,
				    (unsigned long long)need);
	}
	return tfs_fs_failed(fs);
}

/* ===== open and close ===== */

struct orphans {
	uint64_t *ino;
	size_t n, cap;
};

static int find_orphan(struct tfs_inode *ip, void *arg)
{
	struct orphans *o = arg;

	if (ip->a.nlink != 0 || ip->a.ino == TFS_ROOT_INO)
		return 0;
	if (o->n == o->cap) {
		size_t nc = o->cap ? o->cap * 2 : 64;
		uint64_t *ni = realloc(o->ino, nc * sizeof(*ni));

		if (!ni)
			return -ENOMEM;
		o->ino = ni;
		o->cap = nc;
	}
	o->ino[o->n++] = ip->a.ino;
	return 0;
}

struct build {
	struct tfs_fs *fs;
	char *err;
	size_t errlen;
	struct tfs_refs claims; /* shared blocks: 1 + the extents seen */
	int rc;
};

/* A shared piece claimed: the first claim takes it from the allocator. */
static void claimed(uint64_t start, uint64_t len, uint32_t count, void *arg)
{
	struct build *b = arg;

	if (count == 2 && !b->rc &&
	    tfs_alloc_mark_used(b->fs->alloc, start, len))
		b->rc = -EUCLEAN;
}

/* Mark [pblk, pblk + len) used, or count one more claim of the pieces
 * the table says are shared (J12). */
static int claim(struct build *b, uint64_t pblk, uint64_t len)
{
	struct tfs_refs *refs = tfs_meta_refs(b->fs->m);

	if (!tfs_refs_any(refs, pblk, len))
		return tfs_alloc_mark_used(b->fs->alloc, pblk, len);
	while (len) {
		uint64_t run, n;
		uint32_t c = tfs_refs_get(refs, pblk, &run);
		int rc;

		n = run < len ? run : len;
		if (c == 1) {
			rc = tfs_alloc_mark_used(b->fs->alloc, pblk, n);
		} else {
			rc = tfs_refs_inc(&b->claims, pblk, n, claimed, b);
			if (!rc)
				rc = b->rc;
		}
		if (rc)
			return rc;
		pblk += n;
		len -= n;
	}
	return 0;
}

static int mark_extents(struct tfs_inode *ip, void *arg)
{
	struct build *b = arg;

	for (size_t i = 0; i < ip->map.n; i++) {
		struct tfs_extent *e = &ip->map.ext[i];
		int rc = claim(b, e->pblk, e->len);

		if (rc == -ENOMEM)
			return rc;
		if (rc) {
			tfs_say(
			    b->err, b->errlen,
			    "extent of inode %llu (device blocks %llu..%llu) "
			    "overlaps another or lies outside the data area; "
			    "run tensorfs-fsck",
			    (unsigned long long)ip->a.ino,
			    (unsigned long long)e->pblk,
			    (unsigned long long)(e->pblk + e->len - 1));
			return -EUCLEAN;
		}
	}
	return 0;
}

/* Free the inodes a crash left without links; *n gets their number. */
static int drop_orphans(struct tfs_fs *fs, uint64_t *n)
{
	struct orphans orphans = { 0 };
	int rc;

	/* collected first: the walk cannot remove what it walks */
	rc = tfs_meta_each(fs->m, find_orphan, &orphans);
	for (size_t i = 0; i < orphans.n && !rc; i++) {
		struct tfs_inode *ip = tfs_meta_get(fs->m, orphans.ino[i]);

		/* J12: blocks it shared have one extent fewer (without
		 * memory for that, recount() sets the counts right) */
		for (size_t k = 0; k < ip->map.n; k++)
			(void)tfs_refs_dec(tfs_meta_refs(fs->m),
					   ip->map.ext[k].pblk,
					   ip->map.ext[k].len, NULL, NULL);
		tfs_meta_remove(fs->m, ip);
	}
	*n = orphans.n;
	free(orphans.ino);
	return rc;
}

/*
 * J12: every shared block's count is the number of extents claiming it.
 * A count above the claims (a reference a failed split could not give
 * back) is set to them: space found again.  A count below them is
 * damage: the open fails, unless the caller repairs (fsck -y, or a
 * read-only look), and then the claims win too.  fs->refs_wrong counts
 * the pieces set right.
 */
static int recount(struct tfs_fs *fs, struct build *b)
{
	struct tfs_refs *refs = tfs_meta_refs(fs->m), fixed;
	uint64_t below = 0, first = 0, wrong = 0;

	for (size_t i = 0; i < refs->n; i++) {
		const struct tfs_ref *r = &refs->r[i];
		uint64_t p = r->start, end = r->start + r->len;

		while (p < end) {
			uint64_t run;
			uint32_t seen = tfs_refs_get(&b->claims, p, &run) - 1;

			if (seen != r->count) {
				wrong++;
				if (seen > r->count && !below++)
					first = p;
			}
			p += run < end - p ? run : end - p;
		}
	}
	if (!wrong)
		return 0;
	if (below && !fs->opts.repair_refs && !fs->opts.readonly) {
		tfs_say(b->err, b->errlen,
			"device blocks from %llu on are mapped by more "
			"extents than their shared-block count says (%llu "
			"pieces); run tensorfs-fsck -y",
			(unsigned long long)first, (unsigned long long)below);
		return -EUCLEAN;
	}
	/* the claims are the counts (each one above them, as kept) */
	tfs_refs_init(&fixed);
	for (size_t i = 0; i < b->claims.n; i++) {
		const struct tfs_ref *c = &b->claims.r[i];
		int rc = c->count - 1 < 2 ? 0
					  : tfs_refs_set(&fixed, c->start,
							 c->len, c->count - 1);

		if (rc) {
			tfs_refs_release(&fixed);
			return rc;
		}
	}
	tfs_refs_release(refs);
	*refs = fixed;
	fs->refs_wrong = wrong;
	return 0;
}

/* The allocator, from the extent maps: an extent outside the data area
 * or on blocks another one has (beyond what the shared-block counts
 * allow, J12) is -EUCLEAN. */
static int build_alloc(struct tfs_fs *fs, char *err, size_t errlen)
{
	struct build b = { 0 };
	int rc;

	fs->alloc = tfs_journal_new_alloc(&fs->j.sb);
	if (!fs->alloc)
		return -ENOMEM;
	b.fs = fs;
	b.err = err;
	b.errlen = errlen;
	tfs_refs_init(&b.claims);
	rc = tfs_meta_each(fs->m, mark_extents, &b);
	if (!rc)
		rc = recount(fs, &b);
	tfs_refs_release(&b.claims);
	if (!rc && fs->refs_wrong) {
		fs->need_ckpt = 1;
		if (fs->opts.log) {
			char msg[300];

			snprintf(msg, sizeof(msg),
				 "%s: %llu shared-block counts disagreed with "
				 "the extents that map the blocks; set to them",
				 fs->path, (unsigned long long)fs->refs_wrong);
			fs->opts.log(msg);
		}
	}
	/* J10: the checkpoints the superblock copies name are used too */
	if (!rc)
		rc = tfs_journal_hold(&fs->j, fs->alloc, err, errlen);
	/* J11: what is free now waits for two checkpoints like any freed
	 * block; without memory for it nothing is discarded */
	if (!rc && !fs->opts.readonly)
		(void)tfs_alloc_track_discard(fs->alloc);
	return rc;
}

/*
 * Recovery ends with a checkpoint, so that the replayed state is the
 * committed one and the journal starts empty; a clean file system only
 * loses its clean flag (it is in use).
 */
static int end_recovery(struct tfs_fs *fs, uint64_t norphans)
{
	uint64_t tag = NO_TAG;
	int rc;

	pthread_mutex_lock(&fs->jlock);
	pthread_mutex_lock(&fs->lock);
	if (fs->replayed || norphans || !(fs->j.sb.flags & TFS_SB_CLEAN))
		rc = tfs_txn_checkpoint_locked(fs, 0, &tag);
	else
		rc = tfs_journal_set_flags(&fs->j, 0);
	pthread_mutex_unlock(&fs->lock);
	pthread_mutex_unlock(&fs->jlock);
	tfs_txn_release_pending(fs, tag);
	return rc;
}

/* ===== who holds a device ===== */

/* Undo mountinfo's octal escapes (\040 for ' ', \134 for '\\') in place. */
static void unescape(char *s)
{
	char *w = s;

	for (; *s; s++) {
		if (s[0] == '\\' && s[1] >= '0' && s[1] <= '3' && s[2] >= '0' &&
		    s[2] <= '7' && s[3] >= '0' && s[3] <= '7') {
			*w++ = (char)((s[1] - '0') * 64 + (s[2] - '0') * 8 +
				      (s[3] - '0'));
			s += 3;
		} else {
			*w++ = *s;
		}
	}
	*w = '\0';
}

/* Whether path is the file or block device st is. */
static int same_file(const char *path, const struct stat *st)
{
	struct stat o;

	if (stat(path, &o))
		return 0;
	if (S_ISBLK(st->st_mode))
		return S_ISBLK(o.st_mode) && o.st_rdev == st->st_rdev;
	return o.st_dev == st->st_dev && o.st_ino == st->st_ino;
}

/*
 * The mount point and type of a mount of the device st, from
 * /proc/self/mountinfo ("id parent maj:min root mountpoint ... - type
 * source ..."); 0, or -1 if none.  The daemon mounts with the device's
 * real path as source (fsname), so an image file is looked for among
 * fuse.tensorfs mounts only; a block device among mounts of /dev paths,
 * whatever their type.  Only those sources are stat'ed: no other file
 * system (a hung NFS server) is asked.
 */
static int find_mount(const struct stat *st, char *mnt, size_t mlen, char *type,
		      size_t tlen)
{
	FILE *f = fopen("/proc/self/mountinfo", "re");
	char *line = NULL, m[4096], t[256], src[4096];
	size_t cap = 0;
	int found = -1;

	if (!f)
		return -1;
	while (found && getline(&line, &cap, f) > 0) {
		const char *sep = strstr(line, " - ");

		if (!sep || sscanf(line, "%*s %*s %*s %*s %4095s", m) != 1 ||
		    sscanf(sep + 3, "%255s %4095s", t, src) != 2)
			continue;
		unescape(src);
		if (S_ISBLK(st->st_mode) ? strncmp(src, "/dev/", 5)
					 : strcmp(t, "fuse.tensorfs"))
			continue;
		if (!same_file(src, st))
			continue;
		unescape(m);
		snprintf(mnt, mlen, "%s", m);
		snprintf(type, tlen, "%s", t);
		found = 0;
	}
	free(line);
	fclose(f);
	return found;
}

/*
 * A process that has real (the device's real path) open, by the links in
 * /proc/PID/fd: its pid and name (/proc/PID/comm); 0, or -1 if none is
 * found (one that opened it under another name, a hard link, is not; nor
 * are other users' processes unless we are root).
 */
static int find_holder(const char *real, long *pid, char *comm, size_t len)
{
	DIR *proc = opendir("/proc");
	struct dirent *p;
	int found = -1;

	if (!proc)
		return -1;
	while (found && (p = readdir(proc))) {
		char dir[64], link[PATH_MAX], to[PATH_MAX];
		struct dirent *e;
		DIR *fds;

		if (p->d_name[0] < '1' || p->d_name[0] > '9')
			continue;
		snprintf(dir, sizeof(dir), "/proc/%.20s/fd", p->d_name);
		fds = opendir(dir);
		if (!fds)
			continue;
		while (found && (e = readdir(fds))) {
			ssize_t n;

			if (e->d_name[0] == '.')
				continue;
			snprintf(link, sizeof(link), "%s/%s", dir, e->d_name);
			n = readlink(link, to, sizeof(to) - 1);
			if (n <= 0)
				continue;
			to[n] = '\0';
			if (strcmp(to, real))
				continue;
			*pid = strtol(p->d_name, NULL, 10);
			found = 0;
		}
		closedir(fds);
	}
	closedir(proc);
	if (!found) {
		char path[64];
		FILE *f;

		snprintf(path, sizeof(path), "/proc/%ld/comm", *pid);
		comm[0] = '\0';
		f = fopen(path, "re");
		if (f) {
			if (fgets(comm, (int)len, f))
				comm[strcspn(comm, "\n")] = '\0';
			fclose(f);
		}
	}
	return found;
}

/*
 * Why the device at path is busy, for err (which never names path): the
 * mount that holds it and how to unmount it, or the process that has it
 * open, or how to find that process.
 */
static void say_busy(const char *path, char *err, size_t errlen)
{
	char mnt[4096], type[256], real[PATH_MAX], comm[64];
	struct stat st;
	long pid;

	if (!stat(path, &st) &&
	    !find_mount(&st, mnt, sizeof(mnt), type, sizeof(type))) {
		if (!strcmp(type, "fuse.tensorfs"))
			tfs_say(err, errlen,
				"in use: mounted by tensorfs on "
				"%s; unmount it first (umount %s)",
				mnt, mnt);
		else
			tfs_say(err, errlen,
				"in use: mounted on %s (%s); "
				"unmount it first (umount %s)",
				mnt, type, mnt);
	} else if (realpath(path, real) &&
		   !find_holder(real, &pid, comm, sizeof(comm))) {
		tfs_say(err, errlen,
			"in use: not mounted, but process %ld "
			"(%s) has it open; wait for it to finish or "
			"end it",
			pid, *comm ? comm : "?");
	} else {
		tfs_say(err, errlen,
			"in use: not mounted, but another "
			"process has it open (fuser -v DEVICE names "
			"it); wait for it to finish or end it");
	}
}

static int open_dev(struct tfs_fs *fs, const char *path, char *err,
		    size_t errlen)
{
	int rc, dflags = 0;

	if (fs->opts.readonly)
		dflags |= TFS_DEV_RDONLY;
	if (fs->opts.no_lock)
		dflags |= TFS_DEV_NOLOCK;
	if (fs->opts.adopt_member)
		dflags |= TFS_SET_ADOPT;
	if (err && errlen)
		err[0] = '\0';
	rc = tfs_set_open(path, dflags, &fs->dev, err, errlen);
	/* item of the error state: an image deleted or truncated under us */
	for (unsigned int m = 0;
	     !rc && !fs->opts.readonly && m < tfs_dev_members(fs->dev) &&
	     m < TFS_SET_MAX;
	     m++)
		if (!tfs_dev_member_is_blockdev(fs->dev, m))
			fs->watch_fd[m] = open(tfs_dev_member_path(fs->dev, m),
					       O_PATH | O_CLOEXEC);
	if (rc && err && errlen && err[0])
		; /* the set said what */
	else if (rc == -EBUSY)
		say_busy(path, err, errlen);
	else if (rc == -ENOTBLK)
		tfs_say(err, errlen,
			"neither a block device nor a regular "
			"file");
	else if (rc)
		tfs_say(err, errlen, "cannot open it: %s", strerror(-rc));
	return rc;
}

/* The end of tfs_fs_open()'s failure and of tfs_fs_close(): what
 * tfs_fs_open() sets up before anything can fail. */
static void free_fs(struct tfs_fs *fs)
{
	for (unsigned int m = 0; m < TFS_SET_MAX; m++)
		if (fs->watch_fd[m] >= 0)
			close(fs->watch_fd[m]);
	free(fs->path);
	pthread_mutex_destroy(&fs->lock);
	pthread_mutex_destroy(&fs->jlock);
	pthread_mutex_destroy(&fs->errlock);
	pthread_cond_destroy(&fs->cond);
	free(fs);
}

int tfs_fs_open(const char *path, const struct tfs_fs_opts *o,
		struct tfs_fs **out, char *err, size_t errlen)
{
	struct tfs_fs *fs;
	int rc;
	uint64_t norphans = 0;

	fs = calloc(1, sizeof(*fs));
	if (!fs)
		return -ENOMEM;
	if (o)
		fs->opts = *o;
	fs->interval_ms =
	    fs->opts.commit_interval_ms ? fs->opts.commit_interval_ms : 5000;
	pthread_mutex_init(&fs->lock, NULL);
	pthread_mutex_init(&fs->jlock, NULL);
	pthread_mutex_init(&fs->errlock, NULL);
	pthread_cond_init(&fs->cond, NULL);
	for (unsigned int m = 0; m < TFS_SET_MAX; m++)
		fs->watch_fd[m] = -1;
	fs->path = strdup(path);
	if (!fs->path) {
		rc = -ENOMEM;
		goto fail;
	}
	rc = open_dev(fs, path, err, errlen);
	if (rc)
		goto fail;
	fs->m = tfs_meta_new();
	if (!fs->m) {
		rc = -ENOMEM;
		goto fail;
	}
	if (fs->opts.no_replay && !fs->opts.readonly) {
		tfs_say(err, errlen,
			"the journal can be left unreplayed "
			"(norecovery) only by a read-only open");
		rc = -EINVAL;
		goto fail_dev;
	}
	rc = tfs_journal_load(&fs->j, fs->dev, fs->m,
			      fs->opts.no_replay ? TFS_JLOAD_NO_REPLAY : 0, err,
			      errlen);
	if (rc)
		goto fail_dev;
	fs->replayed = fs->j.replayed;
	fs->dirty_at_load = !(fs->j.sb.flags & TFS_SB_CLEAN);
	if (fs->j.note[0] && fs->opts.log) {
		char msg[600];

		snprintf(msg, sizeof(msg), "%s: %s", path, fs->j.note);
		fs->opts.log(msg);
	}
	fs->data_start = fs->j.sb.data_start;
	fs->data_blocks = tfs_super_data_blocks(&fs->j.sb);

	if (!fs->opts.readonly && !fs->opts.no_recover) {
		rc = drop_orphans(fs, &norphans);
		if (rc)
			goto fail_journal;
	}
	rc = build_alloc(fs, err, errlen);
	if (rc)
		goto fail_journal;
	if (!fs->opts.readonly) {
		rc = end_recovery(fs, norphans);
		if (rc) {
			tfs_say(err, errlen, "cannot write to it: %s",
				strerror(-rc));
			goto fail_journal;
		}
	}
	rc = tfs_file_open_cache(fs, err, errlen);
	if (rc)
		goto fail_journal;
	*out = fs;
	return 0;

fail_journal:
	tfs_journal_release(&fs->j);
fail_dev:
	tfs_dev_close(fs->dev);
	fs->dev = NULL;
fail:
	tfs_cache_free(fs->cache);
	tfs_alloc_free(fs->alloc);
	tfs_meta_free(fs->m);
	free_fs(fs);
	return rc;
}

int tfs_fs_start(struct tfs_fs *fs)
{
	int rc;

	if (fs->opts.readonly || fs->thr_started)
		return 0;
	rc = tfs_cache_start(fs->cache);
	if (rc)
		return rc;
	rc = pthread_create(&fs->thr, NULL, tfs_txn_thread, fs);
	if (rc)
		return -rc;
	fs->thr_started = 1;
	return 0;
}

void tfs_fs_prepare_fork(void)
{
	tfs_io_thread_exit();
}

uint64_t tfs_fs_replayed(const struct tfs_fs *fs)
{
	return fs->replayed;
}

uint64_t tfs_fs_not_replayed(const struct tfs_fs *fs)
{
	return fs->j.skipped;
}

int tfs_fs_needs_recovery(const struct tfs_fs *fs)
{
	return fs->dirty_at_load;
}

/* ===== read-only at run time ===== */

int tfs_fs_is_readonly(struct tfs_fs *fs)
{
	return fs->opts.readonly || __atomic_load_n(&fs->ro, __ATOMIC_ACQUIRE);
}

/*
 * rw -> ro: ro is set first, so every change from then on fails with
 * EROFS; then the write-back of everything, a commit and a checkpoint
 * marked CLEAN, as tfs_fs_close() writes them, all under jlock, which
 * tfs_txn_commit() takes before it looks at ro: no commit runs after.
 * ro -> rw: the superblock loses CLEAN again (in use), as at open.
 */
int tfs_fs_set_readonly(struct tfs_fs *fs, int ro)
{
	uint64_t tag = NO_TAG;
	int rc;

	if (fs->opts.readonly)
		return ro ? 0 : -EROFS;
	pthread_mutex_lock(&fs->jlock);
	if (!ro) {
		rc = tfs_fs_failed(fs);
		if (!rc && __atomic_load_n(&fs->ro, __ATOMIC_ACQUIRE)) {
			pthread_mutex_lock(&fs->lock);
			rc = tfs_journal_set_flags(&fs->j, 0);
			pthread_mutex_unlock(&fs->lock);
		}
		if (!rc)
			__atomic_store_n(&fs->ro, 0, __ATOMIC_RELEASE);
		pthread_mutex_unlock(&fs->jlock);
		return rc;
	}
	__atomic_store_n(&fs->ro, 1, __ATOMIC_RELEASE);
	pthread_mutex_unlock(&fs->jlock);
	/* J7: in the error state nothing more is written */
	if (tfs_fs_failed(fs))
		return 0;
	tfs_cache_sync_all(fs->cache);
	pthread_mutex_lock(&fs->jlock);
	rc = tfs_txn_commit_jlocked(fs);
	if (!rc) {
		pthread_mutex_lock(&fs->lock);
		rc = tfs_txn_checkpoint_locked(fs, TFS_SB_CLEAN, &tag);
		pthread_mutex_unlock(&fs->lock);
	}
	pthread_mutex_unlock(&fs->jlock);
	tfs_txn_release_pending(fs, tag);
	return rc;
}

const char *tfs_fs_load_note(const struct tfs_fs *fs)
{
	return fs->j.note[0] ? fs->j.note : NULL;
}

int tfs_fs_close(struct tfs_fs *fs)
{
	int rc = 0;

	if (!fs)
		return 0;
	/* J7: in the error state nothing more is written */
	if (!fs->opts.readonly && !tfs_fs_failed(fs))
		tfs_cache_sync_all(fs->cache);
	if (fs->thr_started) {
		pthread_mutex_lock(&fs->lock);
		fs->stop = 1;
		pthread_cond_signal(&fs->cond);
		pthread_mutex_unlock(&fs->lock);
		pthread_join(fs->thr, NULL);
	}
	/* the kernel's lookups died with the mount: what only they kept
	 * (names removed while looked up) goes with this final commit */
	if (!fs->opts.readonly && !tfs_fs_failed(fs))
		tfs_inode_forget_all(fs);
	if (!fs->opts.readonly && !tfs_fs_failed(fs)) {
		pthread_mutex_lock(&fs->jlock);
		/*
		 * Commit to the journal first: should the superblock of the
		 * final checkpoint ever be unreadable, the previous one plus
		 * the journal still hold everything.
		 */
		uint64_t tag;

		(void)tfs_txn_commit_jlocked(fs);
		pthread_mutex_lock(&fs->lock);
		rc = tfs_txn_checkpoint_locked(fs, TFS_SB_CLEAN, &tag);
		pthread_mutex_unlock(&fs->lock);
		pthread_mutex_unlock(&fs->jlock);
	}
	if (!fs->opts.readonly && tfs_fs_failed(fs)) {
		rc = tfs_fs_failed(fs);
		if (fs->opts.log) {
			char msg[1536];

			snprintf(msg, sizeof(msg),
				 "%s: closed in the error "
				 "state (%s): the final checkpoint was not "
				 "written",
				 fs->path, fs->errmsg);
			fs->opts.log(msg);
		}
	}
	tfs_cache_free(fs->cache);
	tfs_journal_release(&fs->j);
	tfs_dev_close(fs->dev);
	tfs_alloc_free(fs->alloc);
	tfs_inode_drop_all(fs);
	tfs_meta_free(fs->m);
	tfs_buf_release(&fs->txn);
	free(fs->dirty);
	free(fs->pend);
	free_fs(fs);
	return rc;
}

void tfs_fs_get_info(struct tfs_fs *fs, struct tfs_fs_info *info)
{
	pthread_mutex_lock(&fs->lock);
	memset(info, 0, sizeof(*info));
	info->dev_bytes = fs->j.sb.dev_blocks * BS;
	info->block_size = BS;
	info->data_blocks = fs->data_blocks;
	info->free_blocks = tfs_alloc_free_blocks(fs->alloc) + fs->pend_blocks;
	info->free_extents = tfs_alloc_free_extents(fs->alloc);
	info->inodes = tfs_meta_inodes(fs->m);
	info->meta_bytes = tfs_meta_bytes(fs->m);
	info->ckpt_blocks = tfs_journal_held_blocks(&fs->j);
	info->meta_capacity = info->meta_bytes + tfs_txn_avail(fs) * BS;
	info->meta_ram_bytes = tfs_meta_ram(fs->m);
	info->journal_bytes = fs->j.sb.journal_blocks * BS;
	info->generation = fs->j.sb.generation;
	memcpy(info->uuid, fs->j.sb.uuid, 16);
	info->format = fs->j.sb.version;
	pthread_mutex_unlock(&fs->lock);
}

struct tfs_meta *tfs_fs_meta(struct tfs_fs *fs)
{
	return fs->m;
}

struct tfs_alloc *tfs_fs_alloc(struct tfs_fs *fs)
{
	return fs->alloc;
}

void tfs_fs_mark_changed(struct tfs_fs *fs)
{
	pthread_mutex_lock(&fs->lock);
	fs->need_ckpt = 1;
	pthread_mutex_unlock(&fs->lock);
}

int tfs_fs_rewrite_superblocks(struct tfs_fs *fs)
{
	int rc;

	/*
	 * Two checkpoints of the same tree: each goes to the inactive slot
	 * and names itself in the other superblock copy (J4), so afterwards
	 * both slots and both copies hold the repaired tree, and a later
	 * fallback to the older copy (J8) finds it too.
	 */
	tfs_fs_mark_changed(fs);
	rc = tfs_fs_sync(fs);
	if (!rc) {
		tfs_fs_mark_changed(fs);
		rc = tfs_fs_sync(fs);
	}
	return rc;
}

int tfs_fs_rewrite_member_supers(struct tfs_fs *fs)
{
	if (fs->opts.readonly)
		return -EROFS;
	return tfs_journal_write_members(&fs->j);
}

int tfs_fs_upgrade(struct tfs_fs *fs, uint32_t *from)
{
	int rc;

	*from = fs->j.sb.version;
	if (*from == TFS_VERSION)
		return 0;
	if (fs->opts.readonly)
		return -EROFS;
	/* the other members first (flushed), which say 4 from then on but
	 * whose version no mount reads: a crash before the first member's
	 * leaves the old format, which a second run upgrades whole */
	if (fs->j.sb.nmembers > 1) {
		rc = tfs_fs_rewrite_member_supers(fs);
		if (rc)
			return rc;
	}
	pthread_mutex_lock(&fs->lock);
	fs->j.sb.version = TFS_VERSION;
	pthread_mutex_unlock(&fs->lock);
	/* the next superblock written says 4; two write both copies */
	return tfs_fs_rewrite_superblocks(fs);
}

void tfs_fs_get_stats(struct tfs_fs *fs, struct tfs_fs_stats *s)
{
	memset(s, 0, sizeof(*s));
	tfs_cache_get_stats(fs->cache, &s->cache);
	tfs_dev_get_stats(fs->dev, &s->dev);
	s->app_read_bytes =
	    __atomic_load_n(&fs->app_read_bytes, __ATOMIC_RELAXED);
	s->app_write_bytes =
	    __atomic_load_n(&fs->app_write_bytes, __ATOMIC_RELAXED);
	s->copy_bytes = __atomic_load_n(&fs->copy_bytes, __ATOMIC_RELAXED);
	s->clone_bytes = __atomic_load_n(&fs->clone_bytes, __ATOMIC_RELAXED);
}

unsigned int tfs_fs_members(struct tfs_fs *fs)
{
	return tfs_dev_members(fs->dev);
}

int tfs_fs_member_info(struct tfs_fs *fs, unsigned int m,
		       struct tfs_member_info *mi)
{
	const struct tfs_super *sb = &fs->j.sb;
	uint64_t lo = (uint64_t)m << TFS_MEMBER_BITS;

	memset(mi, 0, sizeof(*mi));
	if (m >= tfs_dev_members(fs->dev))
		return -EINVAL;
	mi->path = tfs_dev_member_path(fs->dev, m);
	mi->blockdev = tfs_dev_member_is_blockdev(fs->dev, m);
	tfs_dev_member_stats(fs->dev, m, &mi->dev);
	pthread_mutex_lock(&fs->lock);
	mi->size_bytes = tfs_super_member_blocks(sb, m) * BS;
	mi->data_bytes = mi->size_bytes - tfs_super_data_start(sb, m) * BS;
	mi->free_bytes =
	    tfs_alloc_free_in(fs->alloc, lo, lo + (1ull << TFS_MEMBER_BITS)) *
	    BS;
	pthread_mutex_unlock(&fs->lock);
	return 0;
}

int64_t tfs_extent_count(struct tfs_fs *fs, uint64_t ino)
{
	struct tfs_inode *ip;
	int64_t n;

	pthread_mutex_lock(&fs->lock);
	ip = tfs_meta_get(fs->m, ino);
	n = ip ? (int64_t)tfs_extmap_count(&ip->map) : -ENOENT;
	pthread_mutex_unlock(&fs->lock);
	return n;
}
