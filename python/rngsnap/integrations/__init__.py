"""rngsnap inside the frameworks, one line each (docs/python.md,
"Integrations"):

    rngsnap.integrations.accelerate.attach(accelerator)   # after prepare()
    rngsnap.integrations.transformers.RngsnapTrainer       # a Trainer
    rngsnap.integrations.transformers.RngsnapTrainerMixin  # your own Trainer
    rngsnap.integrations.lightning.RngsnapCallback()       # a Callback
    rngsnap.integrations.dcp.RngState(ctx)                 # a DCP Stateful

The top layer of the package: each module imports rngsnap and
rngsnap.torch, never the other way round, and imports its framework only
when it is itself imported (`import rngsnap` imports no framework).
"""
