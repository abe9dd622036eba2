/*
 * statedir.c: part of the FUSE daemon, the adapter between the kernel's
 * FUSE requests and lib/ calls.  This file holds /.tensorfs/, the mount's
 * counters and configuration as files (see statedir.h).  A fixed table
 * of four files; inode numbers STATEDIR_INO (the directory) and
 * STATEDIR_INO + 1 + i (file i).  After the counters each stats file
 * says how FUSE requests travel and what the connection negotiated
 * (transport.c), then whether the file system is in its error state
 * (fs.h) and why.
 */
#include "statedir.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "config.h"
#include "stats.h"
#include "transport.h"

/* far above the numbers the file system gives out, which count up from 1 */
#define STATEDIR_INO (UINT64_C(1) << 62)

enum {
	F_STATS,
	F_JSON,
	F_METRICS,
	F_CONFIG,
	NFILES
};

static const char *const names[NFILES] = {
	[F_STATS] = "stats",
	[F_JSON] = "stats.json",
	[F_METRICS] = "metrics",
	[F_CONFIG] = "config",
};

void tfs_statedir_init(struct tfs_statedir *sd, struct tfs_fs *fs,
		       const struct tfs_config *cfg, uid_t uid, gid_t gid)
{
	sd->uid = uid;
	sd->gid = gid;
	sd->born = time(NULL);
	sd->fs = fs;
	sd->cfg = cfg;
}

int tfs_statedir_is(uint64_t ino)
{
	return ino >= STATEDIR_INO && ino <= STATEDIR_INO + NFILES;
}

int tfs_statedir_is_dir(uint64_t ino)
{
	return ino == STATEDIR_INO;
}

int tfs_statedir_getattr(const struct tfs_statedir *sd, uint64_t ino,
			 struct stat *st)
{
	if (!tfs_statedir_is(ino))
		return -ENOENT;
	memset(st, 0, sizeof(*st));
	st->st_ino = ino;
	st->st_uid = sd->uid;
	st->st_gid = sd->gid;
	st->st_atime = st->st_mtime = st->st_ctime = sd->born;
	st->st_blksize = 4096;
	if (ino == STATEDIR_INO) {
		st->st_mode = S_IFDIR | 0555;
		st->st_nlink = 2;
	} else {
		/* the size of the content now: an open file's snapshot may
		 * differ, and fstat on it says so (fuse_ops.c) */
		char *buf;
		size_t len;
		int rc;

		st->st_mode = S_IFREG | 0444;
		st->st_nlink = 1;
		buf = tfs_statedir_render(sd, ino, &len, &rc);
		if (!buf)
			return rc;
		free(buf);
		st->st_size = (off_t)len;
		st->st_blocks = 0; /* it takes no space */
	}
	return 0;
}

int tfs_statedir_lookup(const struct tfs_statedir *sd, uint64_t parent,
			const char *name, struct stat *st)
{
	if (parent == TFS_FS_ROOT && !strcmp(name, TFS_STATEDIR_NAME))
		return tfs_statedir_getattr(sd, STATEDIR_INO, st) ? 0 : 1;
	if (parent != STATEDIR_INO)
		return 0;
	for (uint64_t i = 0; i < NFILES; i++)
		if (!strcmp(name, names[i]))
			return tfs_statedir_getattr(sd, STATEDIR_INO + 1 + i,
						    st)
				   ? 0
				   : 1;
	return -ENOENT;
}

int tfs_statedir_deny(uint64_t parent, const char *name, int creating)
{
	if (parent == STATEDIR_INO || tfs_statedir_is(parent))
		return EROFS;
	if (parent == TFS_FS_ROOT && name && !strcmp(name, TFS_STATEDIR_NAME))
		return creating ? EEXIST : EROFS;
	return 0;
}

int tfs_statedir_readdir(uint64_t cookie, tfs_fill_fn fill, void *arg)
{
	if (cookie < 1 && fill(arg, ".", STATEDIR_INO, S_IFDIR, 1))
		return 0;
	if (cookie < 2 && fill(arg, "..", TFS_FS_ROOT, S_IFDIR, 2))
		return 0;
	for (uint64_t i = cookie < 2 ? 0 : cookie - 2; i < NFILES; i++)
		if (fill(arg, names[i], STATEDIR_INO + 1 + i, S_IFREG, i + 3))
			return 0;
	return 0;
}

/*
 * The error state after the counters of buf (which it takes), as one
 * more value in each file: "error" is its errno, 0 outside it (-EIO: 5).
 * In it, stats and stats.json also say why ("error_reason").  The new
 * text, or NULL without memory.
 */
static char *add_error(const struct tfs_statedir *sd, char *buf,
		       enum tfs_stats_format f)
{
	struct tfs_fs *fs = sd->fs;
	char why[1024], *out = NULL;
	size_t n = 0, len = strlen(buf);
	int err = -tfs_fs_error(fs, why, sizeof(why));
	FILE *m = open_memstream(&out, &n);

	if (!m) {
		free(buf);
		return NULL;
	}
	if (f == TFS_STATS_JSON && len >= 3)
		len -= 3; /* "\n}\n" */
	fwrite(buf, 1, len, m);
	free(buf);
	tfs_transport_render(sd->transport,
			     f == TFS_STATS_TEXT   ? 0
			     : f == TFS_STATS_JSON ? 1
						   : 2,
			     m);
	if (f == TFS_STATS_TEXT) {
		fprintf(m, "error %d\n", err);
		if (err)
			fprintf(m, "error_reason %s\n", why);
	} else if (f == TFS_STATS_JSON) {
		fprintf(m, ",\n  \"error\": %d", err);
		if (err) {
			fputs(",\n  \"error_reason\": ", m);
			tfs_stats_json_string(m, why);
		}
		fputs("\n}\n", m);
	} else {
		fprintf(m,
			"# HELP tensorfs_error errno of the error state: a "
			"device error or a changed image stopped all "
			"changes (see the log); 0: none\n"
			"# TYPE tensorfs_error gauge\ntensorfs_error %d\n",
			err);
	}
	if (fclose(m)) {
		free(out);
		return NULL;
	}
	return out;
}

char *tfs_statedir_render(const struct tfs_statedir *sd, uint64_t ino,
			  size_t *len, int *rc)
{
	struct tfs_stats s;
	char *buf = NULL;
	size_t n = 0;

	*rc = 0;
	if (!tfs_statedir_is(ino) || ino == STATEDIR_INO) {
		*rc = -EISDIR;
		return NULL;
	}
	switch (ino - STATEDIR_INO - 1) {
	case F_CONFIG: {
		FILE *m = open_memstream(&buf, &n);

		if (!m)
			break;
		tfs_config_print(sd->cfg, m);
		if (fclose(m)) {
			free(buf);
			buf = NULL;
		}
		break;
	}
	default: {
		enum tfs_stats_format f =
		    ino - STATEDIR_INO - 1 == F_STATS  ? TFS_STATS_TEXT
		    : ino - STATEDIR_INO - 1 == F_JSON ? TFS_STATS_JSON
						       : TFS_STATS_PROM;

		tfs_stats_get(sd->fs, &s);
		buf = tfs_stats_render(&s, f);
		if (buf)
			buf = add_error(sd, buf, f);
		n = buf ? strlen(buf) : 0;
		break;
	}
	}
	if (!buf)
		*rc = -ENOMEM;
	*len = n;
	return buf;
}
