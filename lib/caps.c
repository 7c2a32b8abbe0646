// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Capabilities, through libcap-ng.
 */
#include <cap-ng.h>
#include <linux/capability.h>

#include "caps.h"

bool caps_have_sys_admin(void)
{
	if (capng_get_caps_process() != 0)
		return false;
	return capng_have_capability(CAPNG_EFFECTIVE, CAP_SYS_ADMIN);
}

int caps_drop_to_minimum(void)
{
	static const unsigned int needed[] = { CAP_SYS_ADMIN, CAP_DAC_READ_SEARCH };
	const capng_type_t sets = CAPNG_EFFECTIVE | CAPNG_PERMITTED | CAPNG_BOUNDING_SET;
	capng_select_t which = CAPNG_SELECT_CAPS;
	bool have[2];
	size_t i;

	if (capng_get_caps_process() != 0)
		return -1;
	/* shrinking the bounding set needs CAP_SETPCAP, which a unit may lack */
	if (capng_have_capability(CAPNG_EFFECTIVE, CAP_SETPCAP))
		which = CAPNG_SELECT_BOTH;
	for (i = 0; i < 2; i++)
		have[i] = capng_have_capability(CAPNG_PERMITTED, needed[i]);

	capng_clear(CAPNG_SELECT_ALL);
	/* a capability not held cannot be kept, only the others */
	for (i = 0; i < 2; i++)
		if (have[i] && capng_update(CAPNG_ADD, sets, needed[i]))
			return -1;
	if (capng_apply(which) != 0)
		return -1;
	/* ambient capabilities would survive an exec: drop them all */
	if (capng_apply(CAPNG_SELECT_AMBIENT) != 0)
		return -1;
	return 0;
}
