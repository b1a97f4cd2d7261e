/* A run-length decoder: the input is pairs (count, byte); count's low two bits repeat the byte
 * into out. Exit: decoded length * 8 + number of 'a' bytes decoded (at most 7). */
#include "harness.h"

__attribute__((noinline)) size_t rle_decode(const unsigned char *in, size_t n, unsigned char *out) {
    size_t o = 0;
    for (size_t i = 0; i + 1 < n; i += 2) {
        unsigned cnt = in[i] & 3;
        for (unsigned j = 0; j < cnt; j++) out[o++] = in[i + 1];
    }
    return o;
}

int main(void) {
    char buf[M + 1];
    unsigned char out[3 * (M / 2) + 1];
    size_t n;
    int bad = read_input(buf, &n);
    if (bad) return bad;
    size_t len = rle_decode((const unsigned char *)buf, n, out);
    int as = 0;
    for (size_t i = 0; i < len; i++) as += out[i] == 'a';
    return (int)(len * 8 + (as > 7 ? 7 : as));
}
