"""perceptron_lab: reproduce the perceptron-family papers from YAML configs.

Freund & Schapire (1999) voted perceptron, Khardon & Wachman (2007) noise-tolerant
variants, Gentile (2001) ALMA_p, and the Graepel-Herbrich-Williamson (2000) sparsity bound.
"""

__version__ = "0.1.0"
