/* readlink of the working directory, of a file that is not there and of /proc/self/exe, chosen
 * by an input byte; a second byte limits the buffer. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

int main(void)
{
    char in[2], buf[256];
    if (read(0, in, 2) != 2)
        return 1;
    const char *path = in[0] == 'a' ? "." : in[0] == 'b' ? "nofile" : "/proc/self/exe";
    size_t size = in[1] == 's' ? 4 : sizeof buf - 1;
    ssize_t n = readlink(path, buf, size);
    if (n >= 0) {
        buf[n] = 0;
        char *base = strrchr(buf, '/');
        printf("link %zd %s\n", n == (ssize_t)size ? (ssize_t)-1 : (ssize_t)1, n == (ssize_t)size ? buf : base + 1);
        return 2;
    }
    printf("%s\n", errno == EINVAL ? "not a link" : errno == ENOENT ? "missing" : "other");
    return errno == ENOENT ? 3 : 4;
}
