/* Shared input harness of the loop corpus: stdin is a length byte n, then M buffer bytes.
 * n > M exits with 255; otherwise buf holds n symbolic bytes followed by a NUL. */
#include <stddef.h>
#include <unistd.h>
#ifndef M
#define M 6
#endif

static int read_input(char *buf, size_t *n) {
    unsigned char len = 0;
    if (read(0, &len, 1) != 1 || read(0, buf, M) != M) return 254;
    if (len > M) return 255;
    buf[len] = 0;
    *n = len;
    return 0;
}
