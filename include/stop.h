/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef FSTRIM_EXT_STOP_H
#define FSTRIM_EXT_STOP_H

#include <signal.h>

/* SIGINT or SIGTERM, once one has come: the run stops after this filesystem. */
extern volatile sig_atomic_t stop_signal;

/*
 * SIGINT and SIGTERM are caught, so that what was done is reported, where
 * a trim stopped, what was not done is named, and the exit status is 128
 * + the signal. A caught signal does not stop a FITRIM in the kernel, so
 * lib/trim makes each call in a child that it kills when the pipe becomes
 * readable: the kernel stops the trim where it stops fstrim's (on ext4
 * after the free extent in progress). The journal checkpoint runs to its
 * end. A second signal kills. Returns the read end of the pipe, or -1
 * when none could be made.
 */
int stop_catch(void);

#endif /* FSTRIM_EXT_STOP_H */
