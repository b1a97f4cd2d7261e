/* printf with long double arguments among others: the System V ABI passes each long double on the
 * stack, 16-byte aligned, between the integer arguments that overflow the registers. */
#include <stdio.h>

int main(int argc, char **argv) {
    long double a = argc * 1.25L;
    (void)argv;
    printf("%d %Lg %s %.3Lf %d %d %d %d %d %d %Le\n", 1, a, "s", a * 2, 2, 3, 4, 5, 6, 7, a / 4);
    return 0;
}
