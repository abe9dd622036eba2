/*
 * mountroot.c: the walk up from a path to its tensorfs mount's root (see
 * mountroot.h).  A mount's root is the one directory of it where the
 * daemon answers .tensorfs; a user's own directory of that name deeper
 * in the tree would be found first from below, so the walk goes to the
 * top of the file system and keeps the highest.
 */
#include "mountroot.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int tfs_mount_root(const char *path, char *root, size_t len)
{
	char cur[PATH_MAX], probe[PATH_MAX + sizeof("/.tensorfs")];
	struct stat st, top;
	int rc = -ENOENT;

	if (!realpath(path, cur) || stat(cur, &top))
		return -errno;
	for (;;) {
		if (stat(cur, &st) || st.st_dev != top.st_dev)
			break;
		snprintf(probe, sizeof(probe), "%s/.tensorfs",
			 strcmp(cur, "/") ? cur : "");
		if (!stat(probe, &st) && S_ISDIR(st.st_mode))
			rc = (size_t)snprintf(root, len, "%s", cur) < len
				 ? 0
				 : -ENAMETOOLONG;
		if (!strcmp(cur, "/"))
			break;
		*strrchr(cur, '/') = '\0';
		if (!cur[0])
			strcpy(cur, "/");
	}
	return rc;
}
