from setuptools import setup

package_name = 'aibo_driver'

setup(
    name=package_name,
    version='0.2.0',
    packages=[package_name],
    data_files=[
        ('share/ament_index/resource_index/packages', ['resource/' + package_name]),
        ('share/' + package_name, ['package.xml']),
    ],
    install_requires=['setuptools'],
    zip_safe=True,
    maintainer='Legacy robot drivers maintainers',
    maintainer_email='maintainers@legacy-robots.dev',
    description=(
        'Sony AIBO ERS-2x0 driver for AiboPet RCodePlus / LifePlus telemetry (TCP 21001, '
        'RCODE 21002), with an emulator.'
    ),
    license='Apache-2.0',
    extras_require={'test': ['pytest']},
    entry_points={
        'console_scripts': [
            'aibo_driver = aibo_driver.node:main',
            'aibo_emulator = aibo_driver.emulator:main',
            'aibo_calibrate = aibo_driver.calibrate:main',
        ],
        'legacy_robots.robots': ['aibo = aibo_driver.plugin:PLUGIN'],
    },
)
