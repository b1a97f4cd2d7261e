/* A maze walked by moves from stdin (wasd); reaching the exit prints a message. */
#include <stdio.h>
#include <unistd.h>

static const char maze[7][8] = {
    "#######",
    "#S..#.#",
    "##.##.#",
    "#..#..#",
    "#.##.##",
    "#....E#",
    "#######"};

int main(void) {
    int x = 1, y = 1;
    char moves[16];
    int n = (int)read(0, moves, sizeof moves);
    for (int i = 0; i < n; i++) {
        int nx = x, ny = y;
        switch (moves[i]) {
        case 'w': ny--; break;
        case 's': ny++; break;
        case 'a': nx--; break;
        case 'd': nx++; break;
        default: puts("bad move"); return 1;
        }
        if (maze[ny][nx] == '#') {
            puts("wall");
            return 1;
        }
        x = nx;
        y = ny;
        if (maze[y][x] == 'E') {
            puts("solved");
            return 0;
        }
    }
    puts("lost");
    return 1;
}
