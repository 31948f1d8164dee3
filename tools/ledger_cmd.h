/*
 * ledger_cmd.h - the halves of `rngsnap ledger` (cmd_ledger.c).
 */
#ifndef RNGSNAP_TOOLS_LEDGER_CMD_H
#define RNGSNAP_TOOLS_LEDGER_CMD_H

/* `ledger diff A B [--json]`: CLI_OK every common step matches,
 * CLI_FAIL a difference (reported), CLI_USAGE unreadable or nothing in
 * common. */
int ledger_diff(const char *a, const char *b, int json);

#endif
