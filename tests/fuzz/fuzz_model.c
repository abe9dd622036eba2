/*
 * fuzz_model.c: a model's weights as tensorfs-plan --model reads them
 * (tfs_plan_model_read in lib/plan/model.c): the bytes become a file in
 * a directory of their own, read as an index .json (whose shards resolve
 * in that directory, where only the file itself lies) or as a weights
 * file.
 */
#include <fcntl.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "model.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static char dir[] = "/tmp/fuzz_model.XXXXXX", path[64];
	static int made;
	struct tfs_plan_model m;
	char err[1024];
	int fd;

	if (!made) {
		if (!mkdtemp(dir))
			abort();
		snprintf(path, sizeof(path), "%s/in", dir);
		made = 1;
	}
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0)
		abort();
	if (size && write(fd, data, size) != (ssize_t)size)
		abort();
	close(fd);
	if (tfs_plan_model_read(path, size & 1, &m, err, sizeof(err)) == 0)
		tfs_plan_model_free(&m);
	return 0;
}
