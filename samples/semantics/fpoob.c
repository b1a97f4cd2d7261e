/* a call through a table of function pointers at an index that may leave the table */
#include <stdio.h>
#include <unistd.h>
static int add(int x) { return x + 1; }
static int dbl(int x) { return x * 2; }
static int neg(int x) { return -x; }
int main(void) {
    unsigned char c = 0;
    if (read(0, &c, 1) != 1) return 2;
    int (*ops[3])(int) = {add, dbl, neg};
    unsigned i = c % 4;
    printf("%d\n", ops[i](5));
    return (int)i;
}
