"""scikit-learn and River-style estimators on the plab engine."""
