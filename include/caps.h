/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef FSTRIM_EXT_CAPS_H
#define FSTRIM_EXT_CAPS_H

#include <stdbool.h>

/* Whether CAP_SYS_ADMIN is in the effective set. */
bool caps_have_sys_admin(void);

/*
 * Keep only what the work needs: CAP_SYS_ADMIN for FITRIM and the
 * journal ioctls, CAP_DAC_READ_SEARCH to open any mountpoint. Nothing
 * inheritable, nothing ambient; the bounding set too where we may; and
 * no_new_privs. Returns 0, also when the sets cannot be changed but hold
 * no more than that already; -1 when more would be kept.
 */
int caps_drop_to_minimum(void);

#endif
