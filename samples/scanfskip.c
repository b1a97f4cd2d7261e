/* sscanf skipping a character with %*c (assignment suppression) before a number. */
#include <stdio.h>
#include <unistd.h>
int main(void) {
    char buf[8] = {0};
    if (read(0, buf, 3) != 3) return 9;
    int x = -1;
    int n = sscanf(buf, "%*c%d", &x);
    printf("%d %d\n", n, x);
    return x > 5;
}
