/* Liveness trap for incremental state merging: in the loop, the paths for 'a' and 'b' differ in
 * `last` (read after the loop), in `flag` (a frame variable read through a pointer) and in `tmp`
 * (dead: overwritten before any read). Only merges that ignore dead values keep the outcomes.
 * stdin: byte n (<= 4), then 4 buffer bytes. Exit status: last*100 + count*10 + flag. */
#include <unistd.h>

__attribute__((noinline)) int scan(const unsigned char *s, int n, int *out) {
    int count = 0, last = 0, flag = 0, tmp = 0;
    volatile int *fp = &flag;
    for (int i = 0; i < n; i++) {
        tmp = s[i];
        if (tmp == 'a') {
            count++;
            last = 1;
        } else if (tmp == 'b') {
            count++;
            last = 2;
            *fp += 1;
        } else if (tmp == 'c') {
            count++;            /* 'c' differs from 'a' only in tmp (dead): mergeable */
            last = 1;
        } else {
            break;
        }
        tmp = 0;
    }
    *out = last;
    return count * 10 + *fp;
}

int main(void) {
    unsigned char n = 0, buf[4];
    int last = 0;
    if (read(0, &n, 1) != 1 || read(0, buf, 4) != 4) return 254;
    if (n > 4) return 255;
    int r = scan(buf, n, &last);
    return last * 100 + r;
}
