/*
 * set.c: find the members of a device set and open them in order
 * (set.h).
 *
 * Design: the paths are opened in the order given (tfs_dev_open_set()
 * locks each one and names the one that fails), each member's two
 * superblock copies are read and the valid one with the higher
 * generation kept, and the set is checked as a whole: every member of
 * one file system (the uuid), each index once, none missing, each the
 * size member 0's table records.  Then the members are put in index
 * order (tfs_dev_reorder()), still locked, and the journal's load reads
 * member 0 as it reads a one-device file system.  A member past the
 * first holds nothing but its superblocks (journal.c, J12), which
 * member 0's table can rebuild: one that lost both copies is found by
 * elimination (TFS_SET_ADOPT), for tensorfs-fsck -y to rewrite.
 */
#include "set.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "format.h"
#include "units.h"

/* One path given, and what its superblock says. */
struct given {
	const char *path;
	struct tfs_super sb;
};

static void uuid_str(const uint8_t *u, char *s)
{
	static const char hex[] = "0123456789abcdef";
	int k = 0;

	for (int i = 0; i < 16; i++) {
		if (i == 4 || i == 6 || i == 8 || i == 10)
			s[k++] = '-';
		s[k++] = hex[u[i] >> 4];
		s[k++] = hex[u[i] & 15];
	}
	s[k] = '\0';
}

/* Member m's superblock: the valid copy with the higher generation. */
static int read_member(struct tfs_dev *d, unsigned int m, struct tfs_super *sb,
		       char *err, size_t errlen)
{
	uint8_t *b = tfs_io_alloc(2 * TFS_BLOCK_SIZE);
	struct tfs_super s[2];
	int rc[2], io;

	if (!b)
		return -ENOMEM;
	io = tfs_dev_read(d, b, 2 * TFS_BLOCK_SIZE, tfs_dev_off(m, 0));
	if (io) {
		tfs_io_free(b);
		tfs_say(err, errlen, "'%s': cannot read its superblock: %s",
			tfs_dev_member_path(d, m), strerror(-io));
		return io;
	}
	rc[0] = tfs_super_decode(b, &s[0]);
	rc[1] = tfs_super_decode(b + TFS_BLOCK_SIZE, &s[1]);
	tfs_io_free(b);
	if (rc[0] && rc[1]) {
		tfs_say(err, errlen,
			"'%s' holds no valid tensorfs superblock: it is not a "
			"member of a tensorfs set, or it is damaged (check it "
			"with tensorfs-fsck)",
			tfs_dev_member_path(d, m));
		return rc[0] == -EPROTO || rc[1] == -EPROTO ? -EPROTO : -EINVAL;
	}
	*sb = rc[0]					    ? s[1]
	      : rc[1] || s[0].generation >= s[1].generation ? s[0]
							    : s[1];
	return 0;
}

/*
 * Path i of the n given read no superblock (lost[i]): with exactly one
 * such path and exactly one member missing, of that path's size (an
 * image) or at most it (a device),
 * fill its superblock from member 0's as mkfs wrote it (journal.c's
 * format_members()) when adopt, else say what the repair is.  0 when
 * nothing is lost or it was adopted, else -EINVAL with err set.
 */
static int adopt(struct tfs_dev *d, struct given *g, const int *lost,
		 unsigned int n, const char *spec, int adopt, char *err,
		 size_t errlen)
{
	const struct given *first = NULL;
	unsigned int nlost = 0, at = 0, missing = 0, nmissing = 0;
	int seen[TFS_SET_MAX] = { 0 };

	for (unsigned int i = 0; i < n; i++) {
		if (lost[i]) {
			nlost++;
			at = i;
		} else if (g[i].sb.member == 0) {
			first = &g[i];
		}
	}
	if (!nlost)
		return 0;
	if (nlost == 1 && first && first->sb.nmembers == n) {
		for (unsigned int i = 0; i < n; i++)
			if (!lost[i] && g[i].sb.member < TFS_SET_MAX &&
			    !memcmp(g[i].sb.uuid, first->sb.uuid, 16))
				seen[g[i].sb.member] = 1;
		for (unsigned int m = 1; m < n; m++)
			if (!seen[m]) {
				missing = m;
				nmissing++;
			}
	}
	/* an image of another size, or a device too small, is not it */
	if (nmissing != 1 ||
	    (tfs_dev_member_is_blockdev(d, at)
		 ? tfs_dev_member_size(d, at) <
		       first->sb.member_blocks[missing] * TFS_BLOCK_SIZE
		 : tfs_dev_member_size(d, at) !=
		       first->sb.member_blocks[missing] * TFS_BLOCK_SIZE)) {
		tfs_say(err, errlen,
			"'%s' holds no valid tensorfs superblock: it is not a "
			"member of a tensorfs set, or it is damaged",
			g[at].path);
		return -EINVAL;
	}
	if (!adopt) {
		tfs_say(err, errlen,
			"'%s' holds no valid tensorfs superblock, and member "
			"%u of the set is missing: if '%s' is that member, its "
			"superblocks were damaged; tensorfs-fsck -y %s "
			"rewrites them",
			g[at].path, missing + 1, g[at].path, spec);
		return -EINVAL;
	}
	g[at].sb = first->sb;
	g[at].sb.member = missing;
	g[at].sb.dev_blocks = first->sb.member_blocks[missing];
	return 0;
}

/* Check the members found against each other; order[i] gets the given
 * path that is member i. */
static int check_set(const struct given *g, unsigned int n, unsigned int *order,
		     char *err, size_t errlen)
{
	const struct given *first = NULL;
	int seen[TFS_SET_MAX];
	char u1[40], u2[40], h1[32], h2[32];

	for (unsigned int i = 0; i < n; i++)
		if (g[i].sb.member == 0)
			first = &g[i];
	if (!first) {
		tfs_say(err, errlen,
			"member 1 of the set (the one holding its journal) is "
			"not among the %u devices given: give every member, "
			"joined with ':'",
			n);
		return -EINVAL;
	}
	for (unsigned int i = 0; i < TFS_SET_MAX; i++)
		seen[i] = -1;
	for (unsigned int i = 0; i < n; i++) {
		const struct tfs_super *s = &g[i].sb;

		if (memcmp(s->uuid, first->sb.uuid, 16) ||
		    s->nmembers != first->sb.nmembers) {
			uuid_str(s->uuid, u1);
			uuid_str(first->sb.uuid, u2);
			tfs_say(
			    err, errlen,
			    "'%s' belongs to another tensorfs (uuid %s) than "
			    "'%s' (uuid %s): give the members of one file "
			    "system",
			    g[i].path, u1, first->path, u2);
			return -EINVAL;
		}
		if (seen[s->member] >= 0) {
			tfs_say(
			    err, errlen,
			    "'%s' and '%s' are both member %u of the set: one "
			    "is a copy of the other; give the original only",
			    g[seen[s->member]].path, g[i].path, s->member + 1);
			return -EEXIST;
		}
		seen[s->member] = (int)i;
		if (s->dev_blocks != first->sb.member_blocks[s->member]) {
			tfs_say(
			    err, errlen,
			    "'%s' is member %u of the set, which recorded it "
			    "as %s, but its superblock says %s: it is not "
			    "the member this set was made with",
			    g[i].path, s->member + 1,
			    tfs_format_size(first->sb.member_blocks[s->member] *
						TFS_BLOCK_SIZE,
					    h1, sizeof(h1)),
			    tfs_format_size(s->dev_blocks * TFS_BLOCK_SIZE, h2,
					    sizeof(h2)));
			return -EUCLEAN;
		}
	}
	for (unsigned int m = 0; m < first->sb.nmembers; m++) {
		if (seen[m] < 0) {
			tfs_say(err, errlen,
				"member %u of the set's %u is missing (%u "
				"given): give every member, joined with ':'",
				m + 1, first->sb.nmembers, n);
			return -EINVAL;
		}
		order[m] = (unsigned int)seen[m];
	}
	return 0;
}

/* Split spec at ':' into paths (pointing into copy): their number, or
 * -EINVAL for an empty one. */
static int split(char *copy, const char **paths, char *err, size_t errlen,
		 const char *spec)
{
	unsigned int n = 0;
	char *p = copy;

	for (;;) {
		char *c = strchr(p, ':');

		if (c)
			*c = '\0';
		if (!*p) {
			tfs_say(err, errlen,
				"'%s': an empty device name; join the members "
				"with single ':' (DEV1:DEV2:...)",
				spec);
			return -EINVAL;
		}
		if (n == TFS_SET_MAX) {
			tfs_say(
			    err, errlen,
			    "'%s': more than %u devices; a set has at most %u "
			    "members",
			    spec, TFS_SET_MAX, TFS_SET_MAX);
			return -EINVAL;
		}
		paths[n++] = p;
		if (!c)
			return (int)n;
		p = c + 1;
	}
}

int tfs_set_open(const char *spec, int flags, struct tfs_dev **out, char *err,
		 size_t errlen)
{
	const char *paths[TFS_SET_MAX];
	unsigned int order[TFS_SET_MAX];
	int lost[TFS_SET_MAX] = { 0 };
	struct given *g = NULL;
	struct tfs_dev *d = NULL;
	int adopting = flags & TFS_SET_ADOPT;
	struct stat st;
	char *copy;
	int n, bad, rc;

	flags &= ~TFS_SET_ADOPT;
	if (!strchr(spec, ':') || stat(spec, &st) == 0)
		return tfs_dev_open(spec, flags, out);
	copy = strdup(spec);
	if (!copy)
		return -ENOMEM;
	n = split(copy, paths, err, errlen, spec);
	if (n < 0) {
		free(copy);
		return n;
	}
	if (n == 1) {
		rc = tfs_dev_open(paths[0], flags, out);
		free(copy);
		return rc;
	}
	rc = tfs_dev_open_set(paths, (unsigned int)n, flags, &d, &bad);
	if (rc) {
		if (rc == -EEXIST)
			tfs_say(
			    err, errlen,
			    "'%s' is given twice (it names the same file or "
			    "device as another member)",
			    paths[bad]);
		else if (rc == -EBUSY)
			tfs_say(err, errlen,
				"'%s' is in use (mounted, or opened by "
				"mkfs.tensorfs or tensorfs-fsck); unmount it "
				"first",
				paths[bad]);
		else if (rc == -ENOTBLK)
			tfs_say(err, errlen,
				"'%s' is neither a block device nor a regular "
				"file",
				paths[bad]);
		else if (bad >= 0)
			tfs_say(err, errlen, "cannot open '%s': %s", paths[bad],
				strerror(-rc));
		goto out;
	}
	g = calloc((size_t)n, sizeof(*g));
	if (!g) {
		rc = -ENOMEM;
		goto out;
	}
	for (int i = 0; i < n && !rc; i++) {
		g[i].path = paths[i];
		rc = read_member(d, (unsigned int)i, &g[i].sb, err, errlen);
		if (rc == -EINVAL) {
			lost[i] =
			    1; /* no superblock: perhaps the missing one */
			rc = 0;
		}
	}
	if (!rc)
		rc = adopt(d, g, lost, (unsigned int)n, spec, adopting, err,
			   errlen);
	if (!rc)
		rc = check_set(g, (unsigned int)n, order, err, errlen);
	if (!rc)
		rc = tfs_dev_reorder(d, order);
	if (!rc) {
		*out = d;
		d = NULL;
	}
out:
	tfs_dev_close(d);
	free(g);
	free(copy);
	return rc;
}
