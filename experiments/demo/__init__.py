"""
The `make demo` walkthrough (`python -m experiments.demo`, see `demo.main`): build the demo data,
train fastText, pretrain a small ELMo-C and use it downstream, as a user of the plugin would.
"""
