/* Floating-point numbers read with the scanf family: scanf's %f and %lf from stdin, a width, a
 * suppressed conversion, sscanf's %Lg from a line, and what a failed conversion leaves unread. */
#include <stdio.h>

int main(void)
{
    float f = -1.0f;
    double d = -1.0;
    long double ld = -1.0L;
    char line[16] = {0};
    int n = scanf("%2f%*1[^\n]%lf", &f, &d);
    int next = getchar();
    if (fgets(line, sizeof line, stdin) == NULL)
        line[0] = 0;
    int m = sscanf(line, "%Lg", &ld);
    printf("%d %d %c ", n, m, next < 0 ? '$' : next);
    if (n >= 1 && f > 2.5f && d < 0.5 && d > -1.0)
        puts("small");
    else if (m == 1 && ld > 10.0L)
        puts("big");
    else
        printf("%d %d %d\n", (int)(f * 10), (int)(d * 10), (int)ld);
    return n == 2 ? 0 : 3;
}
