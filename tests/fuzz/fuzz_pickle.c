/*
 * fuzz_pickle.c: a data.pkl alone (lib/tensor/pickle.c and the walk of
 * torch.c), without the zip around it.
 */
#include <stddef.h>
#include <stdint.h>

#include "torch.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct tfs_tensor_list *l = NULL;
	char err[256];

	if (!tfs_torch_parse_pickle(data, size, NULL, "", &l, err, sizeof(err)))
		tfs_tensor_list_free(l);
	return 0;
}
