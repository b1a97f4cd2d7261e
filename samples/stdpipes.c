/* The standard streams as a replay gives them: pipes. fstat reports a FIFO of size 0 (a program
 * that treats a regular stdin differently, seeking to its end, takes the pipe's way); FIONREAD
 * counts the bytes left to read; terminal requests fail with ENOTTY; a closed descriptor is EBADF. */
#include <errno.h>
#include <stdio.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <termios.h>
#include <unistd.h>

int main(void)
{
    struct stat st;
    if (fstat(0, &st) != 0)
        return 5;
    if (S_ISREG(st.st_mode)) {
        off_t end = lseek(0, 0, SEEK_END);
        printf("regular %lld\n", (long long) end);
        return 4;
    }
    printf("fifo=%d size=%lld\n", S_ISFIFO(st.st_mode) ? 1 : 0, (long long) st.st_size);
    char c;
    int sum = 0;
    if (read(0, &c, 1) != 1)
        return 3;
    sum += c;
    int left = -1;
    if (ioctl(0, FIONREAD, &left) != 0)
        return 2;
    printf("left=%d\n", left);
    struct winsize ws;
    errno = 0;
    int r = ioctl(1, TIOCGWINSZ, &ws);
    printf("winsize %d %s\n", r, errno == ENOTTY ? "ENOTTY" : "other");
    errno = 0;
    r = ioctl(42, FIONREAD, &left);
    printf("closed %d %s\n", r, errno == EBADF ? "EBADF" : "other");
    while (read(0, &c, 1) == 1)
        sum += c;
    return sum & 1;
}
