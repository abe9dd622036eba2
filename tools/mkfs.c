/*
 * mkfs.c: mkfs.tensorfs, format a device or an image file.
 *
 * The command line over tfs_mkfs() (lib/mkfs.h), which does the checks
 * and the formatting: this file reads the options, finds the owner of
 * the root directory (the user, or the one who ran sudo) and prints.
 */
#include <errno.h>
#include <getopt.h>
#include <pwd.h>
#include <grp.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "closeout.h"
#include "mkfs.h"
#include "units.h"

static void usage(FILE *f)
{
	struct tfs_mkfs_limits l;
	char min[32], mmin[32], jmin[32], jmax[32];

	tfs_mkfs_limits(&l);
	fprintf(
	    f,
	    "Usage: mkfs.tensorfs [-s SIZE] [-f] [-q] [-u USER[:GROUP]]\n"
	    "                     [--stripe SIZE] DEVICE [DEVICE...]\n"
	    "\n"
	    "Format DEVICE, an NVMe block device or an image file, as tensorfs.\n"
	    "Several DEVICEs, block devices and image files in any mix, become one\n"
	    "file system over all of them (a set, up to %u): each file's data is\n"
	    "striped over the members, and the first holds the journal.  Mount\n"
	    "it with every member joined by ':', in any order:\n"
	    "tensorfs /dev/nvme0n1:/dev/nvme1n1 /local_nvme.\n"
	    "\n"
	    "Options:\n"
	    "  -s SIZE   size of the file system, of each member of a set: creates\n"
	    "            an image file DEVICE that does not exist, or extends it, as\n"
	    "            a sparse file (it takes disk space only as data is written).\n"
	    "            Suffixes K, M, G, T (powers of 1024; also KiB, MiB, GiB,\n"
	    "            TiB) or KB, MB, GB, TB (powers of 1000).  Default: the whole\n"
	    "            device or image.\n"
	    "  --stripe SIZE  of a set: how much of a file goes to one member before\n"
	    "            the next (default 1M; a multiple of 4K, at most 1G)\n"
	    "  -f        overwrite what a block device holds (a tensorfs, another\n"
	    "            file system, a partition table, a RAID or LVM member, swap),\n"
	    "            or an image file that holds data\n"
	    "  -q        quiet: print nothing on success\n"
	    "  -u USER[:GROUP]  owner of the root directory (default: the user running\n"
	    "            mkfs, or the one who ran sudo), so that training jobs can\n"
	    "            write to the mount without being root\n"
	    "  -h, --help  print this help and exit\n"
	    "  -V, --version  print the version and exit\n"
	    "\n"
	    "The minimum size is %s (%s for members past the first).  The\n"
	    "journal takes 1/%" PRIu64 " of the device,\n"
	    "at least %s and at most %s (on a set, of the first device); the\n"
	    "rest is the data area, which holds the files' data and the\n"
	    "checkpoints of the metadata.\n"
	    "\n"
	    "Exit status: 0 formatted, 1 refused or failed (the message says why;\n"
	    "also when its output cannot be written), 2 usage error.\n"
	    "\n"
	    "Examples:\n"
	    "  mkfs.tensorfs -s 100G /var/lib/tensorfs.img\n"
	    "  mkfs.tensorfs /dev/nvme0n1\n"
	    "  mkfs.tensorfs /dev/nvme0n1 /dev/nvme1n1 /dev/nvme2n1 /dev/nvme3n1\n",
	    l.set_max, tfs_format_size(l.min_size, min, sizeof(min)),
	    tfs_format_size(l.member_min, mmin, sizeof(mmin)),
	    l.journal_fraction,
	    tfs_format_size(l.journal_min, jmin, sizeof(jmin)),
	    tfs_format_size(l.journal_max, jmax, sizeof(jmax)));
}

/* The largest uid or gid: (uid_t)-1 means "no change" to chown(2). */
#define ID_MAX 4294967294UL

/* A decimal id, 0 to ID_MAX (no sign, no blanks, no wrapping), into *id:
 * 0, -ERANGE or -EINVAL; prints nothing. */
static int parse_num(const char *s, unsigned long *id)
{
	const char *p;
	unsigned long v = 0;

	for (p = s; *p >= '0' && *p <= '9'; p++) {
		if (v > (ID_MAX - (unsigned long)(*p - '0')) / 10)
			return -ERANGE;
		v = v * 10 + (unsigned long)(*p - '0');
	}
	if (p == s || *p)
		return -EINVAL;
	*id = v;
	return 0;
}

/*
 * One id of -u: a name that getpwnam()/getgrnam() (lookup) knows, or a
 * decimal number from 0 to ID_MAX: no sign, no blanks, no wrapping.
 * Returns 0, or -1 after printing why to stderr; what is "user" or
 * "group".
 */
static int parse_id(const char *s, const char *what, unsigned long *id)
{
	int r;

	if (!*s) {
		fprintf(stderr,
			"mkfs.tensorfs: empty %s in -u; give "
			"USER[:GROUP] or UID[:GID]\n",
			what);
		return -1;
	}
	r = parse_num(s, id);
	if (r == -ERANGE) {
		fprintf(stderr,
			"mkfs.tensorfs: %s id '%s' is out of "
			"range; give a number from 0 to %lu\n",
			what, s, ID_MAX);
		return -1;
	}
	if (r) {
		fprintf(stderr,
			"mkfs.tensorfs: unknown %s '%s'; give a %s "
			"name or a number from 0 to %lu\n",
			what, s, what, ID_MAX);
		return -1;
	}
	return 0;
}

/* -u USER[:GROUP] into *uid and *gid; a user name also sets the gid to
 * its group.  Returns 0, or -1 after printing why. */
static int owner(const char *spec, uid_t *uid, gid_t *gid)
{
	char buf[256], *colon;
	struct passwd *pw;
	struct group *gr;
	unsigned long id;

	if (strlen(spec) >= sizeof(buf)) {
		fprintf(stderr,
			"mkfs.tensorfs: owner '%.40s...' is too "
			"long; give USER[:GROUP] or UID[:GID]\n",
			spec);
		return -1;
	}
	snprintf(buf, sizeof(buf), "%s", spec);
	colon = strchr(buf, ':');
	if (colon)
		*colon++ = '\0';
	pw = *buf ? getpwnam(buf) : NULL;
	if (pw) {
		*uid = pw->pw_uid;
		*gid = pw->pw_gid;
	} else {
		if (parse_id(buf, "user", &id))
			return -1;
		*uid = (uid_t)id;
	}
	if (colon && *colon) {
		gr = getgrnam(colon);
		if (gr) {
			*gid = gr->gr_gid;
		} else {
			if (parse_id(colon, "group", &id))
				return -1;
			*gid = (gid_t)id;
		}
	}
	return 0;
}

/* The root directory's default owner: the user, or the one who ran sudo. */
static void default_owner(uid_t *uid, gid_t *gid)
{
	unsigned long id;
	const char *s;

	*uid = getuid();
	*gid = getgid();
	if (*uid != 0 || !(s = getenv("SUDO_UID")) || !*s)
		return;
	if (parse_num(s, &id)) {
		fprintf(stderr,
			"mkfs.tensorfs: warning: ignoring SUDO_UID='%.40s', "
			"which is not a user id; the root directory belongs to "
			"root (give -u USER to choose)\n",
			s);
		return;
	}
	*uid = (uid_t)id;
	if ((s = getenv("SUDO_GID")) && *s) {
		if (parse_num(s, &id))
			fprintf(stderr,
				"mkfs.tensorfs: warning: ignoring "
				"SUDO_GID='%.40s', which is not a group id\n",
				s);
		else
			*gid = (gid_t)id;
	}
}

/* parse_args() returns GO_ON, or the status main() exits with. */
#define GO_ON (-1)

/* The options into *o and *quiet, the operands into *paths (*n). */
static int parse_args(int argc, char **argv, struct tfs_mkfs_opts *o,
		      int *quiet, const char *const **paths, unsigned int *n)
{
	static const struct option longopts[] = {
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ "stripe", required_argument, NULL, 'S' },
		{ NULL, 0, NULL, 0 },
	};
	struct tfs_mkfs_limits l;
	int c;

	while ((c = getopt_long(argc, argv, "s:fqu:hV", longopts, NULL)) !=
	       -1) {
		switch (c) {
		case 's':
			if (tfs_parse_size(optarg, &o->size, NULL) ||
			    o->size == 0) {
				fprintf(stderr,
					"mkfs.tensorfs: invalid size "
					"'%s'; give bytes or a size like "
					"100G\n",
					optarg);
				return 2;
			}
			break;
		case 'f':
			o->force = 1;
			break;
		case 'S':
			tfs_mkfs_limits(&l);
			if (tfs_parse_size(optarg, &o->stripe, NULL) ||
			    o->stripe == 0 || o->stripe % 4096 ||
			    o->stripe > l.stripe_max) {
				fprintf(stderr,
					"mkfs.tensorfs: invalid stripe unit "
					"'%s'; give a multiple of 4K from 4K "
					"to 1G, like 1M\n",
					optarg);
				return 2;
			}
			break;
		case 'q':
			*quiet = 1;
			break;
		case 'u':
			if (owner(optarg, &o->uid, &o->gid))
				return 2;
			break;
		case 'h':
			usage(stdout);
			return 0;
		case 'V':
			printf("mkfs.tensorfs %s\n", TFS_VERSION_STRING);
			return 0;
		default:
			fputs("Try 'mkfs.tensorfs --help' for more "
			      "information.\n",
			      stderr);
			return 2;
		}
	}
	tfs_mkfs_limits(&l);
	if (argc == optind || argc - optind > (int)l.set_max) {
		fprintf(stderr,
			"mkfs.tensorfs: %s\nUsage: mkfs.tensorfs [-s "
			"SIZE] [-f] [-q] [-u USER[:GROUP]] [--stripe SIZE] "
			"DEVICE [DEVICE...]\n"
			"Try 'mkfs.tensorfs --help' for more information.\n",
			argc == optind ? "missing DEVICE"
				       : "more than 64 devices");
		return 2;
	}
	if (o->stripe && argc - optind == 1) {
		fprintf(stderr, "mkfs.tensorfs: --stripe is for a set of "
				"several devices; give them all\n");
		return 2;
	}
	*paths = (const char *const *)argv + optind;
	*n = (unsigned int)(argc - optind);
	return GO_ON;
}

int main(int argc, char **argv)
{
	struct tfs_mkfs_opts o = { 0 };
	struct tfs_mkfs_info info;
	const char *const *paths = NULL;
	unsigned int n = 0;
	char err[1024], h1[32], h2[32], h3[32];
	int quiet = 0, ret;

	tfs_closeout("mkfs.tensorfs", 1);
	default_owner(&o.uid, &o.gid);
	ret = parse_args(argc, argv, &o, &quiet, &paths, &n);
	if (ret != GO_ON)
		return ret;
	if (tfs_mkfs_set(paths, n, &o, &info, err, sizeof(err))) {
		fprintf(stderr, "mkfs.tensorfs: %s\n", err);
		return 1;
	}
	if (!quiet && n > 1)
		printf("mkfs.tensorfs: formatted a set of %u devices, %s "
		       "first (mount it as %s:...): %s in all, %s for data "
		       "and checkpoints (metadata grows into it as files are "
		       "made), %s for the journal and superblocks\n",
		       n, paths[0], paths[0],
		       tfs_format_size(info.size, h1, sizeof(h1)),
		       tfs_format_size(info.data_bytes, h2, sizeof(h2)),
		       tfs_format_size(info.meta_bytes, h3, sizeof(h3)));
	else if (!quiet)
		printf("mkfs.tensorfs: formatted %s: %s in all, %s for data "
		       "and checkpoints (metadata grows into it as files are "
		       "made), %s for the journal\n",
		       paths[0], tfs_format_size(info.size, h1, sizeof(h1)),
		       tfs_format_size(info.data_bytes, h2, sizeof(h2)),
		       tfs_format_size(info.meta_bytes, h3, sizeof(h3)));
	return 0;
}
