/* SPDX-License-Identifier: MIT */
/*
 * daemon.c - going to the background without losing the exit status, and
 * stderr to syslog once detached.
 *
 * fuse_daemonize() forks after the mount, which would leave behind every
 * thread the io_uring driver, the queue and the journal have started
 * (only the forking thread survives a fork).  So mqfs forks before it
 * opens anything, and the parent waits on a pipe for the child's verdict:
 * `mqfs IMG DIR` (and mount.fuse3, and mount -a) still see exit 1 and
 * the message when the mount fails.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>
#include <unistd.h>
#include "fuse_i.h"

/* Process-wide by nature: one daemon, one parent, one stderr. */
static int bg_status_fd = -1;	/* child: write end of the verdict pipe */
static pthread_t bg_logger;
static bool bg_logging;

/* The parent: exit with the child's verdict; 1 if it died first. */
static void bg_wait_child(int fd)
{
	unsigned char status = 1;
	ssize_t n;

	do
		n = read(fd, &status, 1);
	while (n < 0 && errno == EINTR);
	_exit(n == 1 ? status : 1);
}

int mqfs_bg_start(bool foreground)
{
	int fds[2];
	pid_t pid;

	if (foreground)
		return 0;
	if (pipe2(fds, O_CLOEXEC)) {
		int err = -errno;	/* before printing changes it */

		fprintf(stderr, "mqfs: pipe: %s\n", strerror(-err));
		return err;
	}
	fflush(NULL);
	pid = fork();
	if (pid < 0) {
		fprintf(stderr, "mqfs: fork: %s\n", strerror(errno));
		close(fds[0]);
		close(fds[1]);
		return -EAGAIN;
	}
	if (pid > 0) {
		close(fds[1]);
		bg_wait_child(fds[0]);
	}
	close(fds[0]);
	bg_status_fd = fds[1];
	setsid();	/* leave the caller's session and terminal */
	return 0;
}

/* One syslog record per line written to stderr. */
static void *bg_log_main(void *arg)
{
	FILE *f = fdopen((int)(intptr_t)arg, "r");
	char line[1024];

	if (!f)
		return NULL;
	while (fgets(line, sizeof(line), f)) {
		line[strcspn(line, "\n")] = '\0';
		syslog(LOG_ERR, "%s", line);
	}
	fclose(f);
	return NULL;
}

static void bg_detach(void)
{
	int null = open("/dev/null", O_RDWR | O_CLOEXEC);
	int fds[2];

	if (null >= 0) {
		dup2(null, STDIN_FILENO);
		dup2(null, STDOUT_FILENO);
	}
	openlog("mqfs", LOG_PID, LOG_DAEMON);
	fflush(stderr);
	if (!pipe2(fds, O_CLOEXEC)) {
		if (!pthread_create(&bg_logger, NULL, bg_log_main,
				    (void *)(intptr_t)fds[0])) {
			dup2(fds[1], STDERR_FILENO);
			bg_logging = true;
		} else {
			close(fds[0]);
		}
		close(fds[1]);
	}
	if (!bg_logging && null >= 0)
		dup2(null, STDERR_FILENO);
	if (null > STDERR_FILENO)
		close(null);
}

void mqfs_bg_ready(int status)
{
	unsigned char c = (unsigned char)status;

	if (bg_status_fd < 0)
		return;
	if (!status)
		bg_detach();
	if (write(bg_status_fd, &c, 1) != 1)
		syslog(LOG_ERR, "cannot report start-up to the parent");
	close(bg_status_fd);
	bg_status_fd = -1;
}

void mqfs_bg_finish(void)
{
	int null;

	if (!bg_logging)
		return;
	fflush(stderr);
	/* Closing the last write end lets the logger drain and stop. */
	null = open("/dev/null", O_WRONLY | O_CLOEXEC);
	if (null >= 0) {
		dup2(null, STDERR_FILENO);
		close(null);
	} else {
		close(STDERR_FILENO);
	}
	pthread_join(bg_logger, NULL);
	bg_logging = false;
	closelog();
}

void mqfs_signals_set(sigset_t *s)
{
	sigemptyset(s);
	sigaddset(s, SIGINT);
	sigaddset(s, SIGTERM);
	sigaddset(s, SIGHUP);
	sigaddset(s, SIGQUIT);
}

void mqfs_signals_block(void)
{
	sigset_t s;

	mqfs_signals_set(&s);
	pthread_sigmask(SIG_BLOCK, &s, NULL);
}
