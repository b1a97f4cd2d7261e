/* a callee indexes its caller's stack array through a pointer, with an index that may leave it */
#include <stdio.h>
#include <unistd.h>
__attribute__((noinline)) static int pick(const int *p, int i) { return p[i]; }
int main(void) {
    unsigned char c = 0;
    if (read(0, &c, 1) != 1) return 2;
    int guard = 7;
    int v[6] = {4, 8, 15, 16, 23, 42};
    int i = (int)(c % 8) - 1;           /* -1 .. 6: the ends are outside v */
    int r = pick(v, i);
    printf("%d %d\n", r > 10, guard);
    return r == 15;
}
