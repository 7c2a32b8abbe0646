// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The stop: SIGINT and SIGTERM caught, the signal kept, and a pipe that
 * wakes the wait for a FITRIM.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include "stop.h"

volatile sig_atomic_t stop_signal;
/* a pipe written when one comes: its read end wakes the wait for a FITRIM */
static int stop_pipe[2] = { -1, -1 };

static void on_stop_signal(int sig)
{
	int saved_errno = errno;

	stop_signal = sig;
	if (stop_pipe[1] >= 0 && write(stop_pipe[1], "", 1) < 0) {
		/* full: it is readable already */
	}
	errno = saved_errno;
}

int stop_catch(void)
{
	struct sigaction sa = {
		.sa_handler = on_stop_signal,
		.sa_flags = SA_RESETHAND | SA_RESTART,
	};

	if (pipe2(stop_pipe, O_CLOEXEC | O_NONBLOCK) != 0)
		stop_pipe[0] = stop_pipe[1] = -1;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	/*
	 * SIGCHLD ignored, as a parent may leave it across exec, reaps the
	 * FITRIM child by itself: its waitpid() would fail with ECHILD.
	 */
	signal(SIGCHLD, SIG_DFL);
	return stop_pipe[0];
}
