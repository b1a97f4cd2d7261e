/* The usual way to read numbers until the input ends: while (fscanf(stdin, "%d", &x) == 1), then
   scanf("%3[^0-9]") of what is left. Against glibc natively. */
#include <stdio.h>
int main(void) {
    int x, sum = 0, n = 0;
    while (fscanf(stdin, "%d", &x) == 1) { sum += x; n++; }
    char rest[4] = "";
    int r = scanf("%3[^0-9]", rest);
    printf("%d %d %d [%s]\n", n, sum, r, rest);
    return n;
}
