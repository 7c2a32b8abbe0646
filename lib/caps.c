// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Capabilities, through libcap-ng.
 */
#include <cap-ng.h>
#include <linux/capability.h>
#include <sys/prctl.h>

#include "caps.h"

bool caps_have_sys_admin(void)
{
	if (capng_get_caps_process() != 0)
		return false;
	return capng_have_capability(CAPNG_EFFECTIVE, CAP_SYS_ADMIN);
}

static const unsigned int needed[] = { CAP_SYS_ADMIN, CAP_DAC_READ_SEARCH };

static bool is_needed(unsigned int cap)
{
	return cap == needed[0] || cap == needed[1];
}

/*
 * Whether the process already holds nothing beyond what is needed, and
 * nothing inheritable or ambient: the case of a systemd unit with a
 * tight CapabilityBoundingSet, whose system-call filter may also deny
 * capset(2) itself.
 */
static bool holds_only_needed(void)
{
	unsigned int cap;

	if (capng_get_caps_process() != 0)
		return false;
	for (cap = 0; cap <= CAP_LAST_CAP; cap++) {
		if (capng_have_capability(CAPNG_INHERITABLE, cap) ||
		    capng_have_capability(CAPNG_AMBIENT, cap))
			return false;
		if (!is_needed(cap) && capng_have_capability(CAPNG_PERMITTED, cap))
			return false;
	}
	return true;
}

static int apply_minimum(void)
{
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

int caps_drop_to_minimum(void)
{
	if (apply_minimum() != 0 && !holds_only_needed())
		return -1;
	/* and nothing it could ever execute may gain any back */
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0)
		return -1;
	return 0;
}
