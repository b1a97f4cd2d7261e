/* A function checking a buffer given by pointer: a script builds a call_state with a pointer to
 * symbolic bytes it stored itself. */
#include <stdio.h>
#include <string.h>

__attribute__((noinline)) int verify(const unsigned char *buf, int n) {
    unsigned int acc = 0x1337;
    for (int i = 0; i < n; i++) {
        acc = (acc << 5) ^ (acc >> 3) ^ buf[i];
        if (buf[i] < 0x20 || buf[i] > 0x7e)
            return 0;
    }
    return acc == 0x4a72e5b3u;
}

int main(int argc, char **argv) {
    if (argc < 2)
        return 2;
    puts(verify((const unsigned char *)argv[1], (int)strlen(argv[1])) ? "verified" : "rejected");
    return 0;
}
