/* a loop whose trip count comes from the input (logic-bomb style) */
#include <stdio.h>
#include <unistd.h>
int main(void) {
    unsigned char c = 0;
    if (read(0, &c, 1) != 1) return 2;
    unsigned n = c % 12, steps = 0;
    while (n > 1 && steps < 18) { n = (n % 2) ? 3 * n + 1 : n / 2; steps++; }
    if (steps == 16) { puts("bomb"); return 1; }
    printf("%u\n", steps > 10);
    return 0;
}
