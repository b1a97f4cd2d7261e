/* An exit code computed from the input: the byte itself up to 'a', its low two bits above. Two
 * paths, one with 98 possible exit codes and one with 4. */
#include <stdio.h>

int main(void) {
    int c = getchar();
    if (c == EOF)
        return 200;
    if (c > 'a')
        return c & 3;
    return c;
}
