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
 * A load that fell back to the older superblock copy, because the newer
 * one's checkpoint is damaged (lib/journal.c J8), is an error: changes
 * committed after the older one may be missing.  With -y the open's
 * recovery writes a superblock over the damaged copy: repaired.
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
#include "closeout.h"
#include "fs.h"
#include "units.h"

#define FSCK_OK		 0
#define FSCK_REPAIRED	 1
#define FSCK_UNCORRECTED 4
#define FSCK_OPERROR	 8
#define FSCK_USAGE	 16

/* The name this was run as: tensorfs-fsck, or fsck.tensorfs as fsck(8)
 * runs it (basename of argv[0]); every message says it. */
static const char *prog = "tensorfs-fsck";

static void usage(FILE *f)
{
	fprintf(
	    f,
	    "Usage: %s [-y|-p|-a] [-n] [-f] [-v] [-C FD] [--upgrade] DEVICE\n"
	    "\n"
	    "Check the tensorfs file system on DEVICE, which must not be mounted.\n"
	    "It verifies the checksums of the superblocks, the checkpoint and the\n"
	    "journal, replays the journal as a mount would after a crash, and checks\n"
	    "that no two files share a block, that used and free space add up to the\n"
	    "device, the directory tree, link counts and each file's extents.\n"
	    "\n"
	    "DEVICE is a block device or image file, or the members of a set joined\n"
	    "with ':' (DEV1:DEV2:..., in any order), checked as one file system with\n"
	    "every member's superblocks; -y rewrites a member's damaged ones from the\n"
	    "set's record, also those of a member that lost both (the only one\n"
	    "missing, found by its size).\n"
	    "\n"
	    "Options:\n"
	    "  -y        repair what can be repaired (without -y nothing is written)\n"
	    "  -p, -a    the same as -y (accepted for fsck(8) and boot scripts)\n"
	    "  -n        check only, write nothing (the default); the last of\n"
	    "            -y, -p, -a and -n given wins\n"
	    "  -f        force a full check: accepted for fsck(8) and systemd-fsck\n"
	    "            (fsck.mode=force), as every check is full\n"
	    "  -C FD     progress for fsck(8): accepted, no progress is shown\n"
	    "  -v        verbose: print a summary and every file with its extent count\n"
	    "  --upgrade after the check, and only if no error is left, upgrade a file\n"
	    "            system of format 2 (one device) or 3 (a set), which earlier\n"
	    "            versions made, in place to format 4, whose files can share\n"
	    "            blocks (clones: cp, copy_file_range, tensorfs-snap); no data\n"
	    "            moves, only the superblocks are rewritten, and a crash\n"
	    "            leaves the old format or the new.  Programs that know format\n"
	    "            3 at most cannot mount it afterwards.  It writes the device\n"
	    "            (not with -n); a file system of format 4 is left as it is\n"
	    "  -h, --help  print this help and exit\n"
	    "  -V, --version  print the version and exit\n"
	    "\n"
	    "A clean file system gets one line, as e2fsck's: DEVICE: clean, N files,\n"
	    "USED/TOTAL blocks (N counts directories and links too; blocks are those of\n"
	    "the data area, where files and checkpoints of the metadata live).\n"
	    "\n"
	    "Exit status: fsck(8)'s, which fsck(8) and systemd-fsck read, rather than\n"
	    "the 0 done, 1 failed, 2 usage error of the other tensorfs programs:\n"
	    "0 no errors, 1 errors were found and all repaired, 4 errors left unrepaired\n"
	    "(without -y: any error found), 8 operational error (cannot open, read or\n"
	    "write the device, or it holds no tensorfs, or the output cannot be\n"
	    "written), 16 usage error.\n",
	    prog);
}

/* ===== lib's findings under our name ===== */

/*
 * tfs_check() and tfs_check_extents() begin each finding with
 * "tensorfs-fsck: ".  Run as fsck.tensorfs, they write through this
 * stream, which passes their lines on to stdout with prog in its place.
 */
#define LIB_NAME "tensorfs-fsck: "

struct renamer {
	size_t n; /* bytes in line */
	int mid;  /* line is the rest of a longer one */
	char line[4096];
};

/* Pass on r's line, renamed unless it continues a longer one. */
static int pass_line(struct renamer *r)
{
	size_t t = sizeof(LIB_NAME) - 1;
	int ok;

	if (!r->mid && r->n >= t && !memcmp(r->line, LIB_NAME, t))
		ok = printf("%s: ", prog) >= 0 &&
		     fwrite(r->line + t, 1, r->n - t, stdout) == r->n - t;
	else
		ok = fwrite(r->line, 1, r->n, stdout) == r->n;
	r->mid = r->n && r->line[r->n - 1] != '\n';
	r->n = 0;
	return ok ? 0 : -1;
}

static ssize_t renamer_write(void *cookie, const char *buf, size_t len)
{
	struct renamer *r = cookie;

	for (size_t i = 0; i < len; i++) {
		r->line[r->n++] = buf[i];
		if ((buf[i] == '\n' || r->n == sizeof(r->line)) && pass_line(r))
			return -1;
	}
	return (ssize_t)len;
}

static int renamer_close(void *cookie)
{
	struct renamer *r = cookie;
	int rc = r->n ? pass_line(r) : 0;

	free(r);
	return rc;
}

/* The stream for lib's findings: stdout, or a renamer in front of it;
 * end it with findings_done(). */
static FILE *findings_out(void)
{
	static const cookie_io_functions_t io = {
		.write = renamer_write,
		.close = renamer_close,
	};
	struct renamer *r;
	FILE *f;

	if (!strcmp(prog, "tensorfs-fsck"))
		return stdout;
	r = calloc(1, sizeof(*r));
	f = r ? fopencookie(r, "w", io) : NULL;
	if (!f) {
		free(r);
		return stdout; /* lib's name then, but every finding */
	}
	return f;
}

/* A renamer's last line goes to stdout, whose errors tfs_closeout()
 * reports at exit. */
static void findings_done(FILE *f)
{
	if (f != stdout)
		fclose(f);
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
	FILE *out;
	int n;

	/* past the checksums, what loading refuses is mostly extents
	 * claiming a block twice; if that is it, name them all */
	out = findings_out();
	n = tfs_check_extents(path, out, err2, sizeof(err2));
	findings_done(out);
	fflush(stdout);
	if (n > 0) {
		fprintf(stderr,
			"%s: %s: the file system has overlapping "
			"extents (%d conflict%s, inodes listed above), which "
			"%s cannot repair: it cannot tell which file owns the "
			"shared blocks, and tensorfs will not mount it; "
			"restore those files from a backup onto a new file "
			"system (mkfs.tensorfs)\n",
			prog, path, n, n == 1 ? "" : "s", prog);
		return FSCK_UNCORRECTED;
	}
	strip_advice(err);
	fprintf(stderr, "%s: %s: %s\n", prog, path, err);
	return FSCK_UNCORRECTED;
}

struct args {
	int repair, verbose;
	int upgrade, said_n; /* --upgrade; -n the last of -y and -n */
	const char *path;
};

/* Returns 0 to go on, or 1 with the exit code in *ret (help, usage). */
static int parse_args(int argc, char **argv, struct args *a, int *ret)
{
	static const struct option longopts[] = {
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ "upgrade", no_argument, NULL, 'U' },
		{ NULL, 0, NULL, 0 },
	};
	int c;

	while ((c = getopt_long(argc, argv, "ynvhpaVfC:", longopts, NULL)) !=
	       -1) {
		switch (c) {
		case 'y':
		case 'p': /* fsck(8)'s "preen", e2fsck's -p */
		case 'a': /* its older spelling */
			a->repair = 1;
			a->said_n = 0;
			break;
		case 'n':
			a->repair = 0;
			a->said_n = 1;
			break;
		case 'U':
			a->upgrade = 1;
			break;
		case 'v':
			a->verbose = 1;
			break;
		case 'f': /* e2fsck's "even if clean": every check is */
			break;
		case 'C': { /* e2fsck's progress descriptor */
			char *end;

			errno = 0;
			(void)strtol(optarg, &end, 10);
			if (errno || end == optarg || *end) {
				fprintf(stderr,
					"%s: -C takes a file "
					"descriptor number, not '%s'\n",
					prog, optarg);
				*ret = FSCK_USAGE;
				return 1;
			}
			break;
		}
		case 'h':
			usage(stdout);
			*ret = FSCK_OK;
			return 1;
		case 'V':
			printf("%s %s\n", prog, TFS_VERSION_STRING);
			*ret = FSCK_OK;
			return 1;
		default:
			fprintf(stderr,
				"Try '%s --help' for more "
				"information.\n",
				prog);
			*ret = FSCK_USAGE;
			return 1;
		}
	}
	if (argc - optind != 1) {
		fprintf(stderr,
			"%s: %s\nUsage: %s [-y|-p|-a] [-n] [-f] "
			"[-v] [-C FD] [--upgrade] DEVICE\n",
			prog,
			argc == optind ? "missing DEVICE"
				       : "too many arguments",
			prog);
		*ret = FSCK_USAGE;
		return 1;
	}
	if (a->upgrade && a->said_n) {
		fprintf(stderr,
			"%s: --upgrade writes the device, and -n writes "
			"nothing: give one of them\n",
			prog);
		*ret = FSCK_USAGE;
		return 1;
	}
	a->path = argv[optind];
	return 0;
}

/* Open the file system (read-write to repair); on failure say why and
 * return the exit code, else 0. */
static int open_fs(const struct args *a, struct tfs_fs **fs)
{
	struct tfs_fs_opts o = { 0 };
	char err[512] = "";
	int rc;

	o.readonly = !a->repair;
	o.repair_refs = a->repair; /* J12: counts from the extents */
	o.adopt_member = 1;	   /* a member that lost its superblocks */
	rc = tfs_fs_open(a->path, &o, fs, err, sizeof(err));
	if (!rc)
		return 0;
	/* corrupted metadata is an error we found; the rest is not being
	 * able to look */
	if (rc == -EUCLEAN)
		return refused(a->path, err);
	strip_advice(err);
	fprintf(stderr, "%s: %s: %s\n", prog, a->path, err);
	return FSCK_OPERROR;
}

/* Report damaged superblock copies found before the open; with -y,
 * rewrite both. */
static void report_supers(const struct args *a, struct tfs_fs *fs, int bad,
			  struct tfs_check_result *r)
{
	if (!bad)
		return;
	printf("%s: superblock %s %s damaged; the other one is in use\n", prog,
	       copies(bad), bad == 3 ? "are" : "is");
	r->errors++;
	if (a->repair)
		tfs_fs_rewrite_superblocks(fs);
}

/* Members of a set past the first whose superblocks are damaged (bit m:
 * member m); with -y, rewrite them from the set's record. */
static void report_members(const struct args *a, struct tfs_fs *fs,
			   uint64_t bad, struct tfs_check_result *r)
{
	struct tfs_member_info mi;

	for (unsigned int m = 1; m < 64; m++) {
		if (!(bad >> m & 1) || tfs_fs_member_info(fs, m, &mi))
			continue;
		printf("%s: member %u of the set (%s): a superblock copy is "
		       "damaged or missing%s\n",
		       prog, m + 1, mi.path,
		       a->repair ? "" : "; tensorfs-fsck -y rewrites it");
		r->errors++;
	}
	if (bad && a->repair)
		tfs_fs_rewrite_member_supers(fs);
}

/* After the close: the members' rewritten copies count as repaired if
 * they now read back valid. */
static void verify_members(const struct args *a, uint64_t bad,
			   struct tfs_check_result *r)
{
	uint64_t still = bad;

	if (!bad || !a->repair)
		return;
	if (tfs_check_member_supers(a->path, &still))
		still = bad;
	for (unsigned int m = 1; m < 64; m++) {
		if (!(bad >> m & 1))
			continue;
		if (still >> m & 1) {
			printf("%s: member %u: superblock still damaged "
			       "after the rewrite\n",
			       prog, m + 1);
			continue;
		}
		printf("%s: member %u: superblock copies rewritten from the "
		       "set's record\n",
		       prog, m + 1);
		r->repaired++;
	}
}

/* J8: the load used the older superblock copy. */
static void report_fallback(const struct args *a, struct tfs_fs *fs,
			    struct tfs_check_result *r)
{
	const char *note = tfs_fs_load_note(fs);

	if (!note)
		return;
	printf("%s: %s\n", prog, note);
	r->errors++;
	if (a->repair) {
		printf("%s: the damaged superblock copy was rewritten from "
		       "the older one\n",
		       prog);
		r->repaired++;
	}
}

/* After the close: the rewritten copies count as repaired only if both
 * now read back valid. */
static void verify_supers(const struct args *a, int bad,
			  struct tfs_check_result *r)
{
	int still;

	if (!bad || !a->repair)
		return;
	if (tfs_check_supers(a->path, &still) == 0 && !still) {
		printf("%s: superblock %s repaired (rewritten from the good "
		       "one)\n",
		       prog, copies(bad));
		r->repaired++;
	} else {
		printf("%s: superblock %s still damaged after the "
		       "rewrite\n",
		       prog, copies(bad));
	}
}

/* --upgrade: to format 4, only a file system the check (done and
 * closed) found clean, opened again read-write for it.  Returns 0, or
 * fsck(8)'s operational error if it cannot be opened or written. */
static int upgrade(const struct args *a, const struct tfs_check_result *r,
		   uint32_t format)
{
	struct tfs_fs_opts o = { 0 };
	struct tfs_fs *fs;
	char err[512] = "";
	int rc, rc2;

	if (r->errors) {
		printf("%s: %s: not upgraded: the check found errors; %s\n",
		       prog, a->path,
		       a->repair ? "run it again once they are repaired"
				 : "repair them with -y first");
		return 0;
	}
	if (format != TFS_FS_FORMAT) {
		rc = tfs_fs_open(a->path, &o, &fs, err, sizeof(err));
		if (rc) {
			strip_advice(err);
			fprintf(stderr, "%s: %s: not upgraded: %s\n", prog,
				a->path, err);
			return FSCK_OPERROR;
		}
		rc = tfs_fs_upgrade(fs, &format);
		rc2 = tfs_fs_close(fs);
		if (!rc)
			rc = rc2;
		if (rc) {
			fprintf(stderr,
				"%s: %s: the upgrade from format %u failed: "
				"%s; the file system is of format %u or %u, "
				"whole either way: run %s --upgrade again\n",
				prog, a->path, format, strerror(-rc), format,
				TFS_FS_FORMAT, prog);
			return FSCK_OPERROR;
		}
		if (format != TFS_FS_FORMAT) {
			printf("%s: upgraded from format %u to format %u: its "
			       "files can share blocks now\n",
			       a->path, format, TFS_FS_FORMAT);
			return 0;
		}
	}
	printf("%s: already of format %u: nothing to upgrade\n", a->path,
	       format);
	return 0;
}

/* -v: what the file system holds. */
static void print_summary(const char *path, struct tfs_fs *fs,
			  const struct tfs_check_result *r)
{
	struct tfs_fs_info info;
	char h1[32], h2[32], h3[32], h4[32];

	tfs_fs_get_info(fs, &info);
	printf("%s: format %u; %llu files, %llu directories, %llu symlinks, "
	       "%llu other; %llu extents\n",
	       path, info.format, (unsigned long long)r->files,
	       (unsigned long long)r->dirs, (unsigned long long)r->symlinks,
	       (unsigned long long)r->others, (unsigned long long)r->extents);
	printf(
	    "%s: %s data, %s free in %llu pieces; metadata %s, may "
	    "grow to %s\n",
	    path,
	    tfs_format_size(info.data_blocks * info.block_size, h1, sizeof(h1)),
	    tfs_format_size(info.free_blocks * info.block_size, h2, sizeof(h2)),
	    (unsigned long long)info.free_extents,
	    tfs_format_size(info.meta_bytes, h3, sizeof(h3)),
	    tfs_format_size(info.meta_capacity, h4, sizeof(h4)));
	if (tfs_fs_replayed(fs))
		printf("%s: replayed %llu journal transactions (not "
		       "unmounted cleanly)\n",
		       path, (unsigned long long)tfs_fs_replayed(fs));
	if (r->orphans)
		printf("%s: %llu unlinked inodes, freed at the next "
		       "mount\n",
		       path, (unsigned long long)r->orphans);
}

/* The last line and fsck(8)'s exit code for what was found; info is the
 * file system's size and use, read before it was closed. */
static int conclude(const struct args *a, const struct tfs_check_result *r,
		    const struct tfs_fs_info *info)
{
	int ret;

	if (r->errors == 0)
		ret = FSCK_OK;
	else if (r->repaired >= r->errors)
		ret = FSCK_REPAIRED;
	else
		ret = FSCK_UNCORRECTED;
	if (r->errors)
		printf("%s: %s: %llu errors, %llu repaired%s\n", prog, a->path,
		       (unsigned long long)r->errors,
		       (unsigned long long)r->repaired,
		       a->repair ? "" : " (run with -y to repair)");
	else
		printf(
		    "%s: clean, %llu files, %llu/%llu blocks\n", a->path,
		    (unsigned long long)(r->files + r->dirs + r->symlinks +
					 r->others),
		    (unsigned long long)(info->data_blocks - info->free_blocks),
		    (unsigned long long)info->data_blocks);
	return ret;
}

int main(int argc, char **argv)
{
	struct args a = { 0 };
	struct tfs_check_result r;
	struct tfs_fs_info info;
	struct tfs_fs *fs = NULL;
	int rc, bad = 0, ret;
	uint64_t mbad = 0;
	FILE *out;

	if (argc > 0 && argv[0] && *argv[0]) {
		const char *slash = strrchr(argv[0], '/');

		prog = slash ? slash + 1 : argv[0];
		argv[0] = (char *)prog; /* getopt's messages name it too */
	}
	tfs_closeout(prog, 8);
	if (parse_args(argc, argv, &a, &ret))
		return ret;
	/* before the open, which in repair mode rewrites a superblock; if
	 * this cannot read, the open below says why */
	if (tfs_check_supers(a.path, &bad))
		bad = 0;
	if (tfs_check_member_supers(a.path, &mbad))
		mbad = 0;
	ret = open_fs(&a, &fs);
	if (ret)
		return ret;
	out = findings_out();
	rc = tfs_check(fs,
		       (a.repair ? TFS_CHECK_REPAIR : 0) |
			   (a.verbose ? TFS_CHECK_VERBOSE : 0),
		       out, &r);
	findings_done(out);
	if (rc) {
		fprintf(stderr, "%s: %s: check failed: %s\n", prog, a.path,
			strerror(-rc));
		tfs_fs_close(fs);
		return FSCK_OPERROR;
	}
	report_supers(&a, fs, bad, &r);
	report_members(&a, fs, mbad, &r);
	report_fallback(&a, fs, &r);
	if (a.verbose)
		print_summary(a.path, fs, &r);
	tfs_fs_get_info(fs, &info);
	rc = tfs_fs_close(fs);
	if (rc) {
		fprintf(stderr,
			"%s: %s: writing repairs failed: %s; run "
			"%s -y again\n",
			prog, a.path, strerror(-rc), prog);
		return FSCK_OPERROR;
	}
	verify_supers(&a, bad, &r);
	verify_members(&a, mbad, &r);
	ret = conclude(&a, &r, &info);
	if (a.upgrade && ret != FSCK_OPERROR) {
		int up = upgrade(&a, &r, info.format);

		if (up)
			ret = up;
	}
	return ret;
}
