// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * libFuzzer target: size arguments (-o, -l, -m) through size_parse(),
 * and every size it accepts back through size_to_human().
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "sizes.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char human[SIZE_HUMAN_MAX];
	uint64_t val = 1;
	char *str;
	int rc;

	/* a command line argument is a C string: stop at the first NUL */
	str = malloc(size + 1);
	if (!str)
		return 0;
	memcpy(str, data, size);
	str[size] = '\0';

	rc = size_parse(str, &val);
	/* the contract: 0, -EINVAL or -ERANGE, and no value on failure */
	if (rc != 0 && rc != -EINVAL && rc != -ERANGE)
		abort();
	if (rc != 0 && val != 0)
		abort();
	if (rc == 0) {
		size_to_human(val, human, sizeof(human));
		if (!memchr(human, '\0', sizeof(human)) || !strchr(human, 'B'))
			abort();
	}
	free(str);
	return 0;
}
