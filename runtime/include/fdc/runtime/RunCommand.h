//===- RunCommand.h - The `fdc run` / fdc-run command line ------*- C++ -*-===//

#ifndef FDC_RUNTIME_RUNCOMMAND_H
#define FDC_RUNTIME_RUNCOMMAND_H

/// fdc-run model.so --weights DIR --prompt-ids 1,2,3 --max-new-tokens N
///   [--temperature T] [--top-k K] [--top-p P] [--seed S] [--eos-id E]
///   [--max-context C] [--dump-logits FILE]
/// Prints "ids: a,b,c" and a throughput line; returns the exit code.
/// argv[0] names the command in messages.
/// Global (not namespaced) so the `fdc` driver can forward `fdc run ...`.
int fdcRunMain(int argc, char **argv);

#endif // FDC_RUNTIME_RUNCOMMAND_H
