/*
 * fsck.c: tensorfs-fsck, check (and repair) an unmounted tensorfs.
 *
 * Loading the file system (lib/fs.c) verifies the superblocks, the
 * checkpoint and every journal transaction by checksum and replays the
 * journal as a mount would; tfs_check() then checks the tree and the
 * space.  Without -y nothing is written: a file system that needs only
 * the replay a mount does is clean (exit 0).  With -y the recovery is
 * written too and repairs are made.
 *
 * The superblock copies are checked before the file system is opened:
 * opening it for repair writes a superblock, which overwrites the damaged
 * copy and would hide the damage.  A damaged copy is an error; with -y it
 * is rewritten from the good one (two checkpoints write both copies) and
 * counted as repaired once both read back valid.  Loading refuses
 * extents that overlap, which fsck cannot repair (it cannot tell which
 * file the blocks belong to); tfs_check_extents() then names them.
 *
 * Exit codes are fsck(8)'s, never combined: 0 clean, 1 errors repaired
 * (all of them), 4 errors left, 8 operational error, 16 usage.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "format.h"
#include "fs.h"
#include "io.h"
#include "units.h"

#define FSCK_OK		0
#define FSCK_REPAIRED	1
#define FSCK_UNCORRECTED 4
#define FSCK_OPERROR	8
#define FSCK_USAGE	16

static void usage(FILE *f)
{
	fputs(
"Usage: tensorfs-fsck [-y|-p|-a] [-n] [-v] DEVICE\n"
"\n"
"Check the tensorfs file system on DEVICE, which must not be mounted.\n"
"It verifies the checksums of the superblocks, the checkpoint and the\n"
"journal, replays the journal as a mount would after a crash, and checks\n"
"that no two files share a block, that used and free space add up to the\n"
"device, the directory tree, link counts and each file's extents.\n"
"\n"
"Options:\n"
"  -y        repair what can be repaired (without -y nothing is written)\n"
"  -p, -a    the same as -y (accepted for fsck(8) and boot scripts)\n"
"  -n        check only, write nothing (the default); the last of\n"
"            -y, -p, -a and -n given wins\n"
"  -v        verbose: print a summary and every file with its extent count\n"
"  -h, --help  print this help and exit\n"
"\n"
"Exit status (as fsck(8)): 0 no errors, 1 errors were found and all\n"
"repaired, 4 errors left unrepaired (without -y: any error found),\n"
"8 operational error (cannot open, read or write the device, or it\n"
"holds no tensorfs), 16 usage error.\n", f);
}

/* Both superblock copies should be valid; a mount survives one.  *bad
 * gets bit i set for each damaged copy i. */
static int check_supers(const char *path, int *bad)
{
	struct tfs_dev *d;
	struct tfs_super s;
	uint8_t *b;
	int rc;

	*bad = 0;
	rc = tfs_dev_open(path, TFS_DEV_RDONLY | TFS_DEV_NOLOCK, &d);
	if (rc)
		return rc;
	b = tfs_io_alloc(2 * TFS_BLOCK_SIZE);
	if (!b) {
		tfs_dev_close(d);
		return -ENOMEM;
	}
	rc = tfs_dev_read(d, b, 2 * TFS_BLOCK_SIZE, 0);
	if (!rc) {
		for (int i = 0; i < 2; i++)
			if (tfs_super_decode(b + i * TFS_BLOCK_SIZE, &s))
				*bad |= 1 << i;
	}
	tfs_io_free(b);
	tfs_dev_close(d);
	return rc;
}

/* "copy 0", for a message about the copies set in bad */
static const char *copies(int bad)
{
	return bad == 1 ? "copy 0" : bad == 2 ? "copy 1" : "copies 0 and 1";
}

/* Drop a "; run tensorfs-fsck" advice from a loading error: this is it. */
static void strip_advice(char *err)
{
	static const char tail[] = "; run tensorfs-fsck";
	size_t n = strlen(err), t = sizeof(tail) - 1;

	if (n >= t && !strcmp(err + n - t, tail))
		err[n - t] = '\0';
}

/* tfs_fs_open() refused path as corrupted: say what, and return the exit
 * code. */
static int refused(const char *path, char *err)
{
	char err2[512] = "";
	int n;

	/* past the checksums, what loading refuses is mostly extents
	 * claiming a block twice; if that is it, name them all */
	n = tfs_check_extents(path, stdout, err2, sizeof(err2));
	fflush(stdout);
	if (n > 0) {
		fprintf(stderr, "tensorfs-fsck: %s: the file system has "
			"overlapping extents (%d conflict%s, inodes listed "
			"above), which tensorfs-fsck cannot repair: it cannot "
			"tell which file owns the shared blocks, and tensorfs "
			"will not mount it; restore those files from a backup "
			"onto a new file system (mkfs.tensorfs)\n",
			path, n, n == 1 ? "" : "s");
		return FSCK_UNCORRECTED;
	}
	strip_advice(err);
	fprintf(stderr, "tensorfs-fsck: %s: %s\n", path, err);
	return FSCK_UNCORRECTED;
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct tfs_fs_opts o = { 0 };
	struct tfs_check_result r;
	struct tfs_fs_info info;
	struct tfs_fs *fs = NULL;
	int repair = 0, verbose = 0, c, rc, bad = 0, still, ret;
	char err[512] = "", h1[32], h2[32], h3[32], h4[32];
	const char *path;

	while ((c = getopt_long(argc, argv, "ynvhpa", longopts, NULL)) != -1) {
		switch (c) {
		case 'y':
		case 'p':	/* fsck(8)'s "preen", e2fsck's -p */
		case 'a':	/* its older spelling */
			repair = 1;
			break;
		case 'n':
			repair = 0;
			break;
		case 'v':
			verbose = 1;
			break;
		case 'h':
			usage(stdout);
			return FSCK_OK;
		default:
			fputs("Try 'tensorfs-fsck --help' for more "
			      "information.\n", stderr);
			return FSCK_USAGE;
		}
	}
	if (argc - optind != 1) {
		fprintf(stderr, "tensorfs-fsck: %s\nUsage: tensorfs-fsck "
			"[-y|-p|-a] [-n] [-v] DEVICE\n",
			argc == optind ? "missing DEVICE"
				       : "too many arguments");
		return FSCK_USAGE;
	}
	path = argv[optind];
	/* before the open, which in repair mode rewrites a superblock; if
	 * this cannot read, the open below says why */
	if (check_supers(path, &bad))
		bad = 0;
	o.readonly = !repair;
	rc = tfs_fs_open(path, &o, &fs, err, sizeof(err));
	if (rc) {
		/* corrupted metadata is an error we found; the rest is not
		 * being able to look */
		if (rc == -EUCLEAN)
			return refused(path, err);
		fprintf(stderr, "tensorfs-fsck: %s: %s\n", path, err);
		return FSCK_OPERROR;
	}
	rc = tfs_check(fs, (repair ? TFS_CHECK_REPAIR : 0) |
				   (verbose ? TFS_CHECK_VERBOSE : 0),
		       stdout, &r);
	if (rc) {
		fprintf(stderr, "tensorfs-fsck: %s: check failed: %s\n", path,
			strerror(-rc));
		tfs_fs_close(fs);
		return FSCK_OPERROR;
	}
	if (bad) {
		printf("tensorfs-fsck: superblock %s %s damaged; the other "
		       "one is in use\n", copies(bad), bad == 3 ? "are" : "is");
		r.errors++;
		if (repair) {
			/* two checkpoints rewrite both copies */
			tfs_fs_mark_changed(fs);
			if (!tfs_fs_sync(fs)) {
				tfs_fs_mark_changed(fs);
				tfs_fs_sync(fs);
			}
		}
	}
	tfs_fs_get_info(fs, &info);
	if (verbose) {
		printf("%s: %llu files, %llu directories, %llu symlinks, "
		       "%llu other; %llu extents\n", path,
		       (unsigned long long)r.files, (unsigned long long)r.dirs,
		       (unsigned long long)r.symlinks,
		       (unsigned long long)r.others,
		       (unsigned long long)r.extents);
		printf("%s: %s data, %s free in %llu pieces; metadata %s of "
		       "%s\n", path,
		       tfs_format_size(info.data_blocks * TFS_BLOCK_SIZE, h1,
				       sizeof(h1)),
		       tfs_format_size(info.free_blocks * TFS_BLOCK_SIZE, h2,
				       sizeof(h2)),
		       (unsigned long long)info.free_extents,
		       tfs_format_size(info.meta_bytes, h3, sizeof(h3)),
		       tfs_format_size(info.meta_capacity, h4, sizeof(h4)));
		if (tfs_fs_replayed(fs))
			printf("%s: replayed %llu journal transactions (not "
			       "unmounted cleanly)\n", path,
			       (unsigned long long)tfs_fs_replayed(fs));
		if (r.orphans)
			printf("%s: %llu unlinked inodes, freed at the next "
			       "mount\n", path, (unsigned long long)r.orphans);
	}
	rc = tfs_fs_close(fs);
	if (rc) {
		fprintf(stderr, "tensorfs-fsck: %s: writing repairs failed: "
			"%s; run tensorfs-fsck -y again\n", path,
			strerror(-rc));
		return FSCK_OPERROR;
	}
	if (bad && repair) {
		/* repaired only if both copies now read back valid */
		if (check_supers(path, &still) == 0 && !still) {
			printf("tensorfs-fsck: superblock %s repaired "
			       "(rewritten from the good one)\n", copies(bad));
			r.repaired++;
		} else {
			printf("tensorfs-fsck: superblock %s still damaged "
			       "after the rewrite\n", copies(bad));
		}
	}
	if (r.errors == 0)
		ret = FSCK_OK;
	else if (r.repaired >= r.errors)
		ret = FSCK_REPAIRED;
	else
		ret = FSCK_UNCORRECTED;
	if (r.errors)
		printf("tensorfs-fsck: %s: %llu errors, %llu repaired%s\n",
		       path, (unsigned long long)r.errors,
		       (unsigned long long)r.repaired,
		       repair ? "" : " (run with -y to repair)");
	else if (verbose)
		printf("tensorfs-fsck: %s: clean\n", path);
	return ret;
}
