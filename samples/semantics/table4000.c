/* a 4000-byte global table read at k and k - 1 */
#include <stdio.h>
#include <unistd.h>
static unsigned char t[4000];
int main(void) {
    unsigned char in[2] = {0, 0};
    if (read(0, in, 2) != 2) return 2;
    for (int i = 0; i < 4000; i++) t[i] = (unsigned char)((i * 7) % 13);
    unsigned k = (in[0] | (unsigned)in[1] << 8) % 3999 + 1;
    if (t[k] == 12 && t[k - 1] == 5) { puts("pair"); return 1; }
    puts("no");
    return 0;
}
