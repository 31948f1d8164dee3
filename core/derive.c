/* derive.c - being written (issue 9/10). */
#include <rngsnap.h>
