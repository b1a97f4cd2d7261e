/* a call through a table of function pointers at a symbolic index */
#include <stdio.h>
#include <unistd.h>
static int add(int x) { return x + 1; }
static int dbl(int x) { return x * 2; }
static int neg(int x) { return -x; }
static int sq(int x) { return x * x; }
int main(void) {
    unsigned char c = 0;
    if (read(0, &c, 1) != 1) return 2;
    int (*ops[4])(int) = {add, dbl, neg, sq};
    unsigned i = c % 5;
    if (i == 4) { puts("skip"); return 4; }
    int r = ops[i](7);
    printf("%d\n", r);
    return (int)i;
}
