def cmd_cost(o, b): raise NotImplementedError
