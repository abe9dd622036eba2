/*
 * fuzz_torch.c: a whole torch.save file, of either format, or np.savez
 * file (lib/tensor/torch.c, through zip.c and pickle.c, or npz.c): any
 * bytes end in a list or an error.  Seeds: tests/data/torch and tests/data/npz (tools/fuzz.sh).
 */
#include <stddef.h>
#include <stdint.h>

#include "torch.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct tfs_zip_mem m = {data, size};
	struct tfs_tensor_list *l = NULL;
	char err[256];

	if (!tfs_torch_parse(tfs_zip_read_mem, &m, size, 1u << 20, &l, err,
			     sizeof(err)))
		tfs_tensor_list_free(l);
	return 0;
}
