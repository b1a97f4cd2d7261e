/* scanf from stdin: the stream's position after each call (what getchar reads next) and the
   return value at the input's end. Against glibc natively. */
#include <stdio.h>
int main(void) {
    int a = -7, b = -7;
    char s[4] = "?";
    int r1 = scanf("%d %2s", &a, s);
    int c = getchar();
    int r2 = scanf("%x", &b);
    printf("%d %d [%s] %d|%d %d\n", r1, a, s, c, r2, b);
    return r1 + 1;
}
