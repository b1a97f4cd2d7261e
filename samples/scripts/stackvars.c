/* Two locals read by scanf then passed through arithmetic on the stack: a script starts after the
 * scanf with entry_state(addr=...), builds the frame by hand and stores symbolic values into it. */
#include <stdio.h>

__attribute__((noinline)) void handle(void) {
    int a, b;
    scanf("%d %d", &a, &b);
    a = (a ^ 0x1234) + 77;
    b = b * 3 - a;
    if (a == 0x3c35 && b == 0x7a)
        puts("Good Job.");
    else
        puts("Try again.");
}

int main(void) {
    printf("Enter: ");
    handle();
    return 0;
}
