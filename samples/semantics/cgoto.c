/* a computed goto through a table of label addresses (GNU C) at a symbolic index */
#include <stdio.h>
#include <unistd.h>
int main(void) {
    unsigned char c = 0;
    if (read(0, &c, 1) != 1) return 2;
    static void *labels[] = {&&l0, &&l1, &&l2, &&l3, &&l4};
    int acc = 1;
    goto *labels[c % 5];
l0: acc += 3;
l1: acc *= 5;
l2: acc -= 2;
l3: acc ^= 6;
l4: printf("%d\n", acc);
    return acc & 7;
}
