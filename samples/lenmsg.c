/* A length-prefixed message reader: one length byte, then that many payload bytes into
 * malloc(len). With -DOFF_BY_ONE it terminates the payload at buf[got], one past the end when the
 * whole payload arrived (an AddressSanitizer-confirmed heap overflow). */
#include <stdlib.h>
#include <unistd.h>
int main(void) {
    unsigned char n;
    if (read(0, &n, 1) != 1) return 1;
    if (n > 40) return 1;
    if (n == 0) return 3;                /* empty message */
    unsigned char *buf = malloc(n);
    if (!buf) return 9;
    ssize_t got = read(0, buf, n);
#ifdef OFF_BY_ONE
    buf[got] = 0;
#endif
    if (got < n) return 2;               /* truncated message */
    if (buf[0] == 'A') return 4;
    return buf[n - 1] == 'Z' ? 5 : 6;
}
