/* A call angr has no model of: ttyname (angr stubs it: any return value). Its result decides
 * the exit code, so a run's predictions through it may be wrong; the other path needs no stub. */
#include <unistd.h>

int main(void) {
    char c;
    if (read(0, &c, 1) != 1) return 2;
    if (c == 'x') {
        const char *name = ttyname(0);
        return name ? 0 : 1;
    }
    return 3;
}
