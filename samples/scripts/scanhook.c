/* Three numbers read with scanf, combined by arithmetic; the classic target for a script that hooks
 * scanf with its own SimProcedure storing symbolic integers. */
#include <stdio.h>

int main(void) {
    unsigned int a, b, c;
    printf("Enter the code: ");
    if (scanf("%u %u %u", &a, &b, &c) != 3)
        return 2;
    a = a * 7 + 3;
    b ^= 0xdeadbeef;
    c = (c << 3) - a;
    if (a == 0x2f3 && b == 0xdeadb00f && c == 0x110d)
        puts("Good Job.");
    else
        puts("Try again.");
    return 0;
}
