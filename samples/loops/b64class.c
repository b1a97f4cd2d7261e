/* base64 character classes by a 256-entry decoding table (RFC 4648 alphabet): exit counts the
 * valid characters (low nibble) and flags padding (16) and an invalid character (32). */
#include "harness.h"
static signed char dec[256];
static void init(void) {
    const char *al = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    for (int i = 0; i < 256; i++) dec[i] = -1;
    for (int i = 0; al[i]; i++) dec[(unsigned char)al[i]] = (signed char)i;
    dec['='] = -2;
}
int main(void) {
    char buf[M + 1]; size_t n;
    int bad = read_input(buf, &n);
    if (bad) return bad;
    init();
    int valid = 0, pad = 0, inval = 0;
    for (const char *p = buf; *p; p++) {
        int v = dec[(unsigned char)*p];
        if (v >= 0) valid++;
        else if (v == -2) pad = 16;
        else inval = 32;
    }
    return valid + pad + inval;
}
