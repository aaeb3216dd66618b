from setuptools import setup

package_name = 'ipaq_driver'

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
    description='iPaq + CMUcam + BrainStem robot (Trikebot) driver over TCP, with an emulator.',
    license='Apache-2.0',
    extras_require={'test': ['pytest']},
    entry_points={
        'console_scripts': [
            'ipaq_driver = ipaq_driver.node:main',
            'ipaq_emulator = ipaq_driver.emulator:main',
        ],
        'legacy_robots.robots': ['ipaq = ipaq_driver.plugin:PLUGIN'],
    },
)
