/* The app's pid-namespace init after its Python parent has forked the app and confined itself
 * (launcher/lifecycle/app_init.py): the same wait loop in a static program, so pid 1 holds ~0.3 MB instead of a
 * copy of the launcher's heap. Usage: sharness-init APP_PID REPORT_FD. The signal mask (SIGCHLD, SIGTERM,
 * SIGINT, SIGHUP blocked) is inherited across execve.
 *
 * It reaps every child until the app is reaped; a forwarded signal sent from outside the namespace
 * (si_pid 0: only the launcher reaches it there) is passed on to the app. Then it writes the app's wait status
 * (4 bytes, little-endian) to REPORT_FD and exits with the app's exit code, or 128 + its signal. */
#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

static int reap(pid_t app, int *app_status) {
    int found = 0;
    for (;;) {
        int status = 0;
        pid_t pid = waitpid(-1, &status, WNOHANG);
        if (pid <= 0)
            return found;
        if (pid == app) {
            *app_status = status;
            found = 1;
        }
    }
}

int main(int argc, char **argv) {
    if (argc != 3)
        return 127;
    char *end = NULL;
    long app = strtol(argv[1], &end, 10);
    if (*end != '\0' || app <= 1)
        return 127;
    long report = strtol(argv[2], &end, 10);
    if (*end != '\0' || report < 0)
        return 127;
    sigset_t waited;
    sigemptyset(&waited);
    sigaddset(&waited, SIGCHLD);
    sigaddset(&waited, SIGTERM);
    sigaddset(&waited, SIGINT);
    sigaddset(&waited, SIGHUP);
    sigprocmask(SIG_BLOCK, &waited, NULL);
    int status = 0;
    for (;;) {
        if (reap((pid_t)app, &status))  /* first: the app may have ended before this program started */
            break;
        siginfo_t info;
        if (sigwaitinfo(&waited, &info) < 0) {
            if (errno == EINTR)
                continue;
            return 127;
        }
        if (info.si_signo != SIGCHLD && info.si_pid == 0)
            kill((pid_t)app, info.si_signo);
    }
    uint8_t bytes[4] = {status & 0xff, (status >> 8) & 0xff, (status >> 16) & 0xff, (status >> 24) & 0xff};
    ssize_t written = write((int)report, bytes, sizeof bytes);
    (void)written;  /* the launcher is gone: nobody to tell */
    return WIFSIGNALED(status) ? 128 + WTERMSIG(status) : WEXITSTATUS(status);
}
