"""Studies that go beyond the papers, built from ordinary config runs plus work of their own.

* :mod:`perceptron_lab.studies.budget`: kernel perceptrons on a memory budget (Forgetron, RBP,
  Projectron, Projectron++, Stoptron) and NORMA against the unbudgeted perceptron and a Nyström
  approximation (``results/budget/``; ``make reproduce SET=budget``).
"""
